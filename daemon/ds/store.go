package ds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// maxOffset bounds every offset, end and size a component may have.
const maxOffset = 1 << 50

const crcSuffix = ".crc"

// The modes of everything in a store: only the data server's user may
// read a component (the file system below is the only access control a
// local user of a storage node meets). Stores made with wider modes are
// narrowed by openStore.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// store keeps components as files under dir (see doc.go). It is safe for
// concurrent use. Open components are cached in open; a component in use
// by a call is pinned by refs and never closed under it.
type store struct {
	dir      string
	disk     Disk
	log      *slog.Logger
	bs       uint64
	shift    uint
	sum      checksummer
	capacity uint64
	used     atomic.Int64 // bytes allocated to all components plus the growth of writes in flight
	tombs    *tombstones
	now      func() int64 // unix ns: the server's clock, for tombstones
	wb       *writeback   // early writeback of written ranges (writeback.go)

	blocks sync.Pool // *[]byte of bs bytes: read-modify-write scratch
	sums   sync.Pool // *[]byte: checksum file images

	mu     sync.Mutex
	open   map[rpc.ComponentID]*entry
	staged map[rpc.ComponentID]*entry // staged copies in use (stage.go)
	idle   lru                        // entries with refs == 0, most recently used first
	closed bool
}

// openStore opens (or creates) the store in dir.
func openStore(dir string, d Disk, log *slog.Logger, id string, bs int, capacity uint64) (*store, error) {
	if err := d.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("create store dir: %w", err)
	}
	if err := private(d, dir, true); err != nil {
		return nil, err
	}
	if err := loadFormat(d, dir, format{ID: id, BlockSize: bs}); err != nil {
		return nil, err
	}
	if capacity == 0 {
		total, _, err := d.Statfs(dir)
		if err != nil {
			return nil, fmt.Errorf("capacity of %s: %w", dir, err)
		}
		capacity = total
	}
	tombs, err := openTombstones(d, dir, time.Now().UnixNano())
	if err != nil {
		return nil, err
	}
	st := &store{
		tombs:    tombs,
		now:      func() int64 { return time.Now().UnixNano() },
		dir:      dir,
		disk:     d,
		log:      log,
		bs:       uint64(bs),
		shift:    uint(bits.TrailingZeros(uint(bs))),
		sum:      newChecksummer(bs),
		capacity: capacity,
		open:     map[rpc.ComponentID]*entry{},
		staged:   map[rpc.ComponentID]*entry{},
	}
	used, err := st.scan()
	if err != nil {
		tombs.close()
		return nil, err
	}
	st.used.Store(int64(used))
	st.wb = newWriteback()
	return st, nil
}

// scan returns the bytes held by the components in the store (their
// allocated blocks: holes hold none), and
// narrows the modes of what a store made by an older version left wider
// than dirMode and fileMode.
func (st *store) scan() (uint64, error) {
	subs, err := st.disk.ReadDir(st.dir)
	if err != nil {
		return 0, fmt.Errorf("scan store: %w", err)
	}
	var used uint64
	for _, sub := range subs {
		subPath := filepath.Join(st.dir, sub.Name())
		if sub.Type().IsRegular() {
			if err := privateEntry(st.disk, subPath, sub); err != nil {
				return 0, err
			}
			continue
		}
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		if err := privateEntry(st.disk, subPath, sub); err != nil {
			return 0, err
		}
		files, err := st.disk.ReadDir(subPath)
		if err != nil {
			return 0, fmt.Errorf("scan store: %w", err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() {
				continue
			}
			if err := privateEntry(st.disk, filepath.Join(subPath, f.Name()), f); err != nil {
				return 0, err
			}
			if strings.HasSuffix(f.Name(), crcSuffix) {
				continue
			}
			info, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("scan store: %w", err)
			}
			used += allocatedInfo(info)
		}
	}
	return used, nil
}

// private narrows the mode of name, a directory if dir, to the store's.
func private(d Disk, name string, dir bool) error {
	want := fileMode
	if dir {
		want = dirMode
	}
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("store mode of %s: %w", name, err)
	}
	info, err := f.Stat()
	f.Close()
	if err != nil {
		return fmt.Errorf("store mode of %s: %w", name, err)
	}
	if info.Mode().Perm()&^want == 0 {
		return nil
	}
	if err := d.Chmod(name, want); err != nil {
		return fmt.Errorf("store mode of %s: %w", name, err)
	}
	return nil
}

// privateEntry is private for an entry ReadDir listed.
func privateEntry(d Disk, name string, e fs.DirEntry) error {
	info, err := e.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scan store: %w", err)
	}
	want := fileMode
	if e.IsDir() {
		want = dirMode
	}
	if info.Mode().Perm()&^want == 0 {
		return nil
	}
	if err := d.Chmod(name, want); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store mode of %s: %w", name, err)
	}
	return nil
}

// path is the data file of id.
func (st *store) path(id rpc.ComponentID) string {
	var b [64]byte
	name := strconv.AppendUint(b[:0], id.Ino, 10)
	name = append(name, '.')
	name = strconv.AppendUint(name, id.Gen, 10)
	name = append(name, '.')
	name = strconv.AppendUint(name, uint64(id.Col), 10)
	return filepath.Join(st.dir, subdir(id), string(name))
}

func subdir(id rpc.ComponentID) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[id.Ino>>4&0xf], hex[id.Ino&0xf]})
}

// componentName is how errors and logs name a component.
func componentName(id rpc.ComponentID) string {
	return fmt.Sprintf("component %d.%d.%d", id.Ino, id.Gen, id.Col)
}

// charge counts need bytes more against the capacity, or fails with
// ErrNoSpace if they would exceed it.
func (st *store) charge(need int64) error {
	for {
		used := st.used.Load()
		if used+need > int64(st.capacity) {
			return fmt.Errorf("%w: %d bytes more would exceed the capacity of %d bytes (%d used)",
				ErrNoSpace, need, st.capacity, used)
		}
		if st.used.CompareAndSwap(used, used+need) {
			return nil
		}
	}
}

// settle counts what e's data file really holds on disk (its allocated
// blocks, so holes cost nothing) in place of what was counted for it.
func (st *store) settle(e *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		return
	}
	a, err := allocated(e.data)
	if err != nil {
		return // counted as before: the next settle corrects it
	}
	st.used.Add(int64(a) - int64(e.reserved))
	e.reserved = a
}

func (e *entry) getSize() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.size
}

func (e *entry) grow(end uint64) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.size = max(e.size, end)
	return e.size
}

// write stores p at off in component id, creating it, and returns the
// component's size after. wire holds p's end-to-end checksums
// (rpc.SumBlock); nothing is stored unless p matches them. Bytes are
// written with one pwrite straight from p and their CRCs with a second
// one. Where the block size is rpc.SumBlock, a whole block's CRC is its
// wire checksum: each block is summed once.
func (st *store) write(id rpc.ComponentID, off uint64, p, wire []byte) (uint64, error) {
	return st.writeSums(id, off, p, wire, false)
}

// writeSums is write; with verified, wire was checked against p by the
// caller and is not checked again (writeEntry).
func (st *store) writeSums(id rpc.ComponentID, off uint64, p, wire []byte, verified bool) (uint64, error) {
	n := uint64(len(p))
	if off > maxOffset || n > maxOffset-off {
		return 0, fmt.Errorf("%w: write of %d bytes at %d", ErrRange, n, off)
	}
	if want := rpc.SumCount(off, len(p)) * rpc.SumSize; len(wire) != want {
		return 0, fmt.Errorf("write %s: %w: %d bytes of checksums for %d bytes at %d, want %d",
			componentName(id), rpc.ErrSum, len(wire), n, off, want)
	}
	if !verified && st.bs != rpc.SumBlock {
		if err := rpc.CheckSums(off, wire, p); err != nil {
			return 0, fmt.Errorf("write %s: %w", componentName(id), err)
		}
	}
	e, err := st.acquire(id, n > 0)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	return st.writeEntry(e, off, p, wire, verified)
}

// writeEntry is write on the open entry e, once off, p and wire are
// checked. With verified, the caller has checked wire against p already
// (a rebuild verifies every block it receives, or sums what it decoded):
// a whole block's stored CRC is then its wire CRC, extended over the
// block's trailing zeros, and p is not summed again.
func (st *store) writeEntry(e *entry, off uint64, p, wire []byte, verified bool) (uint64, error) {
	id, n, fast := e.id, uint64(len(p)), st.bs == rpc.SumBlock
	if n == 0 {
		return e.getSize(), nil
	}
	end := off + n
	b0, b1 := off>>st.shift, (end-1)>>st.shift
	e.ranges.lock(b0, b1, true)
	defer e.ranges.unlock(b0, b1, true)
	// Growth is counted before the write (a write into a hole after it,
	// by settle): the capacity holds the bytes written, not the sparse
	// length.
	old := e.getSize()
	need := int64(0)
	if end > old {
		need = int64(min(n, end-old))
	}
	if err := st.charge(need); err != nil {
		return 0, fmt.Errorf("write %s: %w", componentName(id), err)
	}
	defer func() {
		st.used.Add(-need)
		st.settle(e)
	}()

	sums := st.getSums(int(b1 - b0 + 1))
	defer st.sums.Put(sums)
	for b := b0; b <= b1; b++ {
		start := b << st.shift
		lo := max(off, start) - start // where p's bytes begin within the block
		hi := min(end, start+st.bs) - start
		piece := p[start+lo-off : start+hi-off]
		var oldLen uint64 // bytes of the block that the component held
		if old > start {
			oldLen = min(old, start+st.bs) - start
		}
		var s uint32
		if oldLen > 0 && (lo > 0 || hi < oldLen) {
			// Old bytes survive around the new ones: only the first and
			// last block of a write can get here.
			var err error
			s, err = st.mergeSum(e, b, oldLen, lo, piece)
			if err != nil {
				return 0, fmt.Errorf("write %s: %w", componentName(id), err)
			}
		} else if fast && verified && lo == 0 {
			s = st.sum.extend(getSum(wire, int(b-b0)), len(piece))
		} else {
			s = st.sum.sum(int(lo), piece)
		}
		if fast && !verified {
			plain := s
			if lo > 0 || hi < st.bs {
				plain = crc32c.Checksum(piece) // a partial block: its CRC is not the wire's
			}
			if plain != getSum(wire, int(b-b0)) {
				return 0, fmt.Errorf("write %s: %w: the piece at %d", componentName(id), rpc.ErrSum, start+lo)
			}
		}
		putSum(*sums, int(b-b0), s)
	}
	if _, err := e.data.WriteAt(p, int64(off)); err != nil {
		return 0, fmt.Errorf("write %s: %w", componentName(id), err)
	}
	if _, err := e.crc.WriteAt(*sums, int64(b0*sumSize)); err != nil {
		return 0, fmt.Errorf("write %s checksums: %w", componentName(id), err)
	}
	st.wb.start(e.data, int64(off), int64(n))
	return e.grow(end), nil
}

// mergeSum returns the CRC of block b after piece is written at lo within
// it, oldLen bytes of it being held already. It verifies the old bytes
// first: a corrupt block fails rather than being blessed with a new CRC.
func (st *store) mergeSum(e *entry, b, oldLen, lo uint64, piece []byte) (uint32, error) {
	buf := st.getBlock()
	defer st.blocks.Put(buf)
	blk := (*buf)[:oldLen]
	if err := st.readBlock(e, b, blk); err != nil {
		return 0, err
	}
	copy((*buf)[lo:], piece)
	return st.sum.sum(0, (*buf)[:max(oldLen, lo+uint64(len(piece)))]), nil
}

// readBlock reads the held bytes of block b into blk (len(blk) is how
// many the component holds) and verifies them against the stored CRC.
// On return the rest of blk's block-sized backing array is zero.
func (st *store) readBlock(e *entry, b uint64, blk []byte) error {
	var sb [sumSize]byte
	if err := readFull(e.crc, sb[:], int64(b*sumSize)); err != nil {
		return fmt.Errorf("read checksum of block %d: %w", b, err)
	}
	if err := readFull(e.data, blk, int64(b<<st.shift)); err != nil {
		return fmt.Errorf("read block %d: %w", b, err)
	}
	clear(blk[len(blk):cap(blk)])
	_, err := st.check(e.id, b, blk, getSum(sb[:], 0))
	return err
}

// check verifies one block's bytes against its stored CRC and returns
// their plain CRC32C (checksummer.verify).
func (st *store) check(id rpc.ComponentID, b uint64, blk []byte, stored uint32) (uint32, error) {
	plain, ok := st.sum.verify(blk, stored)
	if ok {
		return plain, nil
	}
	st.log.Error("checksum mismatch", "inode", id.Ino, "gen", id.Gen, "col", id.Col, "block", b)
	return 0, &checksumError{id: id, block: b}
}

// checksumError is a block that failed its CRC. Its message is what the
// client sees, whatever context wraps it.
type checksumError struct {
	id    rpc.ComponentID
	block uint64
}

func (e *checksumError) Error() string {
	return fmt.Sprintf("%v in %s block %d", ErrChecksum, componentName(e.id), e.block)
}

func (e *checksumError) Unwrap() error { return ErrChecksum }

// buffer hands out the slice a read fills; *rpc.Data is one.
type buffer interface {
	Buffer(n int) []byte
}

var _ buffer = (*rpc.Data)(nil)

// read fills a buffer from out with the bytes of component id in
// [off, off+length), short where the component ends, appends their
// end-to-end checksums (rpc.SumBlock) to *wire, and returns how many it
// filled and the component's size. Every block touched is verified; on
// error the buffer's content is undefined and must not be returned. A
// missing component reads as empty. Blocks wholly inside the range are
// read straight into the buffer with one pread; a partly covered first or
// last block goes through a scratch block so that it can be verified whole.
// Where the block size is rpc.SumBlock, a whole block's wire checksum is
// the CRC its verification computes: each block is summed once.
func (st *store) read(id rpc.ComponentID, off, length uint64, out buffer, wire *[]byte) (int, uint64, error) {
	return st.readHeld(id, off, length, nil, func(e *entry, end, size uint64) (int, error) {
		p := out.Buffer(int(end - off))
		if err := st.readRange(e, off, end, size, p, wire); err != nil {
			return 0, err
		}
		if st.bs != rpc.SumBlock {
			*wire = rpc.AppendSums(*wire, off, p)
		}
		return len(p), nil
	})
}

// readHeld pins component id and read-locks the blocks of
// [off, off+length); where the component holds bytes there, it runs fill
// with the end of those bytes and the component's size, and returns what
// fill returns with the size. A missing component reads as empty. With
// keep set, the pin is not dropped on return but handed to keep, whose
// caller drops it by calling the function it gets (a reply sent later).
func (st *store) readHeld(id rpc.ComponentID, off, length uint64, keep func(unpin func()), fill func(e *entry, end, size uint64) (int, error)) (int, uint64, error) {
	if off > maxOffset || length > maxOffset-off {
		return 0, 0, fmt.Errorf("%w: read of %d bytes at %d", ErrRange, length, off)
	}
	e, err := st.acquire(id, false)
	if e == nil || err != nil {
		return 0, 0, err
	}
	if keep != nil {
		keep(func() { st.release(e) })
	} else {
		defer st.release(e)
	}
	if length == 0 {
		return 0, e.getSize(), nil
	}
	l0, l1 := off>>st.shift, (off+length-1)>>st.shift
	e.ranges.lock(l0, l1, false)
	defer e.ranges.unlock(l0, l1, false)
	size := e.getSize()
	if off >= size {
		return 0, size, nil
	}
	n, err := fill(e, min(off+length, size), size)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", componentName(id), err)
	}
	return n, size, nil
}

func (st *store) readRange(e *entry, off, end, size uint64, p []byte, wire *[]byte) error {
	fast := st.bs == rpc.SumBlock
	b0, b1 := off>>st.shift, (end-1)>>st.shift
	sums := st.getSums(int(b1 - b0 + 1))
	defer st.sums.Put(sums)
	if err := readFull(e.crc, *sums, int64(b0*sumSize)); err != nil {
		return fmt.Errorf("read checksums: %w", err)
	}
	blockEnd := func(b uint64) uint64 { return min((b<<st.shift)+st.bs, size) }
	headPartial := off > b0<<st.shift || end < blockEnd(b0)
	tailPartial := b1 != b0 && end < blockEnd(b1)
	mid0, mid1 := off, end
	if headPartial {
		mid0 = min(blockEnd(b0), end)
	}
	if tailPartial {
		mid1 = b1 << st.shift
	}
	if mid0 < mid1 {
		if err := readFull(e.data, p[mid0-off:mid1-off], int64(mid0)); err != nil {
			return err
		}
	}
	for b := b0; b <= b1; b++ {
		start := b << st.shift
		lo, hi := max(off, start), min(end, start+st.bs)
		if (b == b0 && headPartial) || (b == b1 && tailPartial) {
			buf := st.getBlock()
			blk := (*buf)[:blockEnd(b)-start]
			err := readFull(e.data, blk, int64(start))
			if err == nil {
				_, err = st.check(e.id, b, blk, getSum(*sums, int(b-b0)))
			}
			if err == nil {
				copy(p[lo-off:hi-off], blk[lo-start:hi-start])
			}
			st.blocks.Put(buf)
			if err != nil {
				return err
			}
			if fast {
				*wire = binary.LittleEndian.AppendUint32(*wire, crc32c.Checksum(p[lo-off:hi-off]))
			}
			continue
		}
		plain, err := st.check(e.id, b, p[lo-off:hi-off], getSum(*sums, int(b-b0)))
		if err != nil {
			return err
		}
		if fast {
			*wire = binary.LittleEndian.AppendUint32(*wire, plain)
		}
	}
	return nil
}

// truncate sets the size of component id, creating it, and returns the
// size. Growth reads as zeros; the block cut by a shrink gets a new CRC
// after its surviving bytes are verified.
func (st *store) truncate(id rpc.ComponentID, size uint64) (uint64, error) {
	if size > maxOffset {
		return 0, fmt.Errorf("%w: truncate to %d", ErrRange, size)
	}
	e, err := st.acquire(id, size > 0)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	return st.truncateEntry(e, size)
}

// truncateEntry is truncate on the open entry e.
func (st *store) truncateEntry(e *entry, size uint64) (uint64, error) {
	e.ranges.lock(0, math.MaxUint64, true)
	defer e.ranges.unlock(0, math.MaxUint64, true)
	if err := st.truncateFiles(e, e.getSize(), size); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", componentName(e.id), err)
	}
	return size, nil
}

func (st *store) truncateFiles(e *entry, old, size uint64) error {
	cut := size < old && size&(st.bs-1) != 0
	var sb [sumSize]byte
	c := size >> st.shift
	if cut {
		buf := st.getBlock()
		defer st.blocks.Put(buf)
		start := c << st.shift
		if err := st.readBlock(e, c, (*buf)[:min(old, start+st.bs)-start]); err != nil {
			return err
		}
		putSum(sb[:], 0, st.sum.sum(0, (*buf)[:size-start]))
	}
	if err := e.data.Truncate(int64(size)); err != nil {
		return err
	}
	e.mu.Lock()
	e.size = size
	e.mu.Unlock()
	st.settle(e) // growth is a hole: it costs nothing
	if cut {
		if _, err := e.crc.WriteAt(sb[:], int64(c*sumSize)); err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
	}
	nblocks := (size + st.bs - 1) >> st.shift
	if err := e.crc.Truncate(int64(nblocks * sumSize)); err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	return nil
}

// punch makes n bytes of component id at off read as zeros, up to its
// end (its size is kept), and returns its size. Whole blocks are
// deallocated and get the hole's CRC (0), so their space is released; a
// block the range covers only in part is verified, then its bytes in the
// range are overwritten with zeros. A missing component is not created.
func (st *store) punch(id rpc.ComponentID, off, n uint64) (uint64, error) {
	if off > maxOffset || n > maxOffset-off {
		return 0, fmt.Errorf("%w: punch of %d bytes at %d", ErrRange, n, off)
	}
	e, err := st.acquire(id, false)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	if n == 0 {
		return e.getSize(), nil
	}
	b0, b1 := off>>st.shift, (off+n-1)>>st.shift
	e.ranges.lock(b0, b1, true)
	defer e.ranges.unlock(b0, b1, true)
	size := e.getSize()
	end := min(off+n, size)
	if off >= end {
		return size, nil
	}
	if err := st.punchBlocks(e, off, end, size); err != nil {
		return 0, fmt.Errorf("punch %s: %w", componentName(id), err)
	}
	st.settle(e)
	return size, nil
}

// punchBlocks zeros [off, end) of e, which holds size bytes (end <= size);
// the caller holds the range lock of its blocks.
func (st *store) punchBlocks(e *entry, off, end, size uint64) error {
	b0, b1 := off>>st.shift, (end-1)>>st.shift
	sums := st.getSums(int(b1 - b0 + 1))
	defer st.sums.Put(sums)
	var whole0, whole1 uint64 // the whole blocks to deallocate: [whole0, whole1)
	for b := b0; b <= b1; b++ {
		start := b << st.shift
		held := min(size, start+st.bs) - start
		lo, hi := max(off, start)-start, min(end, start+st.bs)-start
		if lo == 0 && hi >= held {
			if whole1 == 0 {
				whole0 = b
			}
			whole1 = b + 1
			putSum(*sums, int(b-b0), 0)
			continue
		}
		buf := st.getBlock()
		blk := (*buf)[:held]
		err := st.readBlock(e, b, blk)
		if err == nil {
			clear(blk[lo:hi])
			putSum(*sums, int(b-b0), st.sum.sum(0, blk))
			_, err = e.data.WriteAt(blk[lo:hi], int64(start+lo))
		}
		st.blocks.Put(buf)
		if err != nil {
			return err
		}
	}
	if whole1 > whole0 {
		from := whole0 << st.shift
		to := min(whole1<<st.shift, size)
		if err := punchHole(e.data, int64(from), int64(to-from)); err != nil {
			return err
		}
	}
	if _, err := e.crc.WriteAt(*sums, int64(b0*sumSize)); err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	return nil
}

// grow extends component id to size if it is shorter, creating it, makes
// it durable and returns its size. It never shrinks a component, so it
// may run beside writers.
func (st *store) grow(id rpc.ComponentID, size uint64) (uint64, error) {
	if size > maxOffset {
		return 0, fmt.Errorf("%w: grow to %d", ErrRange, size)
	}
	e, err := st.acquire(id, size > 0)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	e.ranges.lock(0, math.MaxUint64, true)
	old := e.getSize()
	if old < size {
		err = st.truncateFiles(e, old, size)
	}
	e.ranges.unlock(0, math.MaxUint64, true)
	if err != nil {
		return 0, fmt.Errorf("grow %s: %w", componentName(id), err)
	}
	if old >= size {
		return old, nil
	}
	return st.commit(id)
}

// commit makes component id durable and returns its size. A missing
// component commits as empty.
func (st *store) commit(id rpc.ComponentID) (uint64, error) {
	e, err := st.acquire(id, false)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	return st.commitEntry(e)
}

// commitEntry is commit on the open entry e.
func (st *store) commitEntry(e *entry) (uint64, error) {
	id := e.id
	if err := e.data.Sync(); err != nil {
		return 0, fmt.Errorf("commit %s: %w", componentName(id), err)
	}
	if err := e.crc.Sync(); err != nil {
		return 0, fmt.Errorf("commit %s checksums: %w", componentName(id), err)
	}
	e.mu.Lock()
	synced := e.dirSynced
	e.mu.Unlock()
	if !synced {
		if err := syncDir(st.disk, filepath.Join(st.dir, subdir(id))); err != nil {
			return 0, fmt.Errorf("commit %s: %w", componentName(id), err)
		}
		e.mu.Lock()
		e.dirSynced = true
		e.mu.Unlock()
	}
	return e.getSize(), nil
}

// stat returns the size of component id; a missing one has size 0.
func (st *store) stat(id rpc.ComponentID) (uint64, error) {
	e, err := st.acquire(id, false)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	return e.getSize(), nil
}

// remove deletes component id and its staged copy (stage.go); a missing
// one is not an error. Calls in flight on it finish on the unlinked files.
func (st *store) remove(id rpc.ComponentID) error {
	if err := st.removeStaged(id); err != nil {
		return err
	}
	e, err := st.acquire(id, false)
	if err != nil {
		return err
	}
	name := st.path(id)
	if e == nil {
		if err := st.disk.Remove(name + crcSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", componentName(id), err)
		}
		return nil
	}
	defer st.release(e)
	return st.unlinkEntry(e, name, st.open)
}

// unlinkEntry removes the files name and name.crc of the open entry e,
// listed in table, and drops it from there. It unlinks under st.mu so
// that no call opens the old files once the entry is dropped; calls in
// flight on e finish on the unlinked files.
func (st *store) unlinkEntry(e *entry, name string, table map[rpc.ComponentID]*entry) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.dead {
		return nil // removed by a concurrent call
	}
	if err := st.disk.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", componentName(e.id), err)
	}
	st.drop(e, table)
	if err := st.disk.Remove(name + crcSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s checksums: %w", componentName(e.id), err)
	}
	return nil
}

// drop marks e, whose files are gone or replaced, dead and forgets it in
// table and in the bytes used. st.mu must be held.
func (st *store) drop(e *entry, table map[rpc.ComponentID]*entry) {
	if table[e.id] == e {
		delete(table, e.id)
	}
	e.mu.Lock()
	e.dead = true
	st.used.Add(-int64(e.reserved))
	e.reserved = 0
	e.mu.Unlock()
}

// usage returns the bytes stored and the capacity.
func (st *store) usage() (used, capacity uint64) {
	return uint64(max(st.used.Load(), 0)), st.capacity
}

func (st *store) getBlock() *[]byte {
	if b, ok := st.blocks.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, st.bs)
	return &b
}

// getSums returns a pooled checksum image of n entries.
func (st *store) getSums(n int) *[]byte {
	b, _ := st.sums.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	if cap(*b) < n*sumSize {
		*b = make([]byte, n*sumSize)
	}
	*b = (*b)[:n*sumSize]
	return b
}

// readFull fills p from f at off; bytes past the end of f read as zeros.
func readFull(f File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		clear(p[n:])
		return nil
	}
	return err
}
