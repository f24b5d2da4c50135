package fuse

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/client"
)

// Read-ahead in the daemon. The kernel reads a file sequentially one
// request (1 MiB) at a time or little more; each request would wait for a
// data server round trip. When reads of an open file go forward, the bytes
// ahead are read from the data servers in the background, in batches of
// raBatch bytes (one client read each, which the client runs on all the
// columns a batch covers at once), so the kernel's next requests find them
// in memory. The window starts at raBatch and doubles with every request
// it serves, up to raMax: a long sequential reader soon has several batches
// in flight, a reader that reads a little and seeks costs little. Each
// handle is a reader of its own (raStream).
//
// Requests are answered from a batch's buffer itself: the reply to the
// kernel is written from it (raReply), no copy in between.
const (
	raBlock = 1 << 20  // size and alignment of a read-ahead block
	raBatch = 4 << 20  // bytes one background read fetches (a multiple of raBlock)
	raMax   = 32 << 20 // the largest window ahead of a sequential reader
	raStart = raBatch  // the window when read-ahead starts
)

// raKeep is how many batch buffers a mount keeps for the next batches.
// A reader streaming a file frees one about as often as it needs one, so
// a few suffice to make its buffers come round again (a sync.Pool does
// not: a GC empties it, and buffers of this size make GCs come often).
const raKeep = 4

// raBufs holds free batch buffers (raBatch bytes each).
type raBufs chan *[]byte

// get returns a free buffer, or a new one.
func (l raBufs) get() *[]byte {
	select {
	case b := <-l:
		return b
	default:
		b := make([]byte, raBatch)
		return &b
	}
}

// put keeps b for a later get if there is room.
func (l raBufs) put(b *[]byte) {
	select {
	case l <- b:
	default:
	}
}

// readahead holds one open inode's blocks read ahead. Blocks are immutable
// once read. A write or truncate on this mount drops them all after the
// change is in the writer, and a block's read first waits for the writer,
// so no block misses a change made here; close-to-open covers changes
// made elsewhere (open drops the blocks too).
//
// Each handle of the inode is a stream of its own (the kernel sends a
// READ with the handle of the descriptor that reads, or whose page-cache
// read-ahead it is): processes reading different parts of one file each
// go forward and are read ahead, and the blocks kept are those some
// stream can still use. The blocks are shared: streams that read the
// same part read it once.
type readahead struct {
	of *openFile

	mu      sync.Mutex
	streams map[*handle]*raStream
	blocks  map[int64]*raBlockRef // by block index
	wg      sync.WaitGroup        // background reads
}

// raStream is where one handle reads.
type raStream struct {
	next        int64 // where it reads next if it goes on
	seq         int   // reads in a row that went forward; two start read-ahead
	window      int64 // bytes to keep read ahead of it
	first, last int64 // the blocks of its last read
}

// keeps reports whether block i is one s may still use: one block behind
// its last read (the kernel may answer requests out of order) and what it
// can read ahead of it.
func (s *raStream) keeps(i int64) bool {
	return i >= s.first-1 && i <= s.last+(s.window+raMax)/raBlock
}

// raBlockRef is one block of a batch.
type raBlockRef struct {
	b   *raData
	off int // of the block in the batch's buffer
}

// raData is a batch being read or read: contiguous blocks read with one
// client read. refs counts the blocks of it in the map, the background
// read while it runs, and every reply still being written from it; at
// zero its buffer goes back to the mount's free buffers.
type raData struct {
	done chan struct{} // closed when buf, n and err are set
	free raBufs        // where buf goes when the last reference is gone
	buf  *[]byte
	n    int // bytes read (fewer than the batch at the end of the file)
	err  error
	cost int64 // bytes taken from the mount's budget, until its blocks are evicted
	refs atomic.Int32
	held int // blocks of it in the map (guarded by readahead.mu)
}

func (b *raData) ref() { b.refs.Add(1) }

func (b *raData) unref() {
	if b.refs.Add(-1) == 0 && b.buf != nil {
		b.free.put(b.buf)
		b.buf = nil
	}
}

// block returns the bytes of the block at off in the batch (short or empty
// at the end of the file). The batch must be done without error.
func (b *raData) block(off int) []byte {
	return (*b.buf)[min(off, b.n):min(off+raBlock, b.n)]
}

func (ra *readahead) init(of *openFile) {
	ra.of = of
	ra.streams = map[*handle]*raStream{}
	ra.blocks = map[int64]*raBlockRef{}
}

// read reads len(dest) bytes at off through f for the handle h, from
// blocks read ahead where it can, and starts reading ahead of a
// forward-moving stream. The reply holds the bytes: in dest, or in the
// blocks read ahead themselves (the kernel's copy is made from there). It
// holds fewer bytes only at the end of the file.
func (ra *readahead) read(f *client.File, h *handle, dest []byte, off int64) (gofuse.ReadResult, error) {
	end := off + int64(len(dest))
	first, last := off/raBlock, (end-1)/raBlock
	ra.mu.Lock()
	st := ra.streams[h]
	if st == nil {
		st = &raStream{}
		ra.streams[h] = st
	}
	if off >= st.next-raBlock && off <= st.next+raBlock {
		st.seq++
		st.next = max(st.next, end)
	} else {
		st.seq, st.next, st.window = 0, end, 0
	}
	st.first, st.last = first, last
	for i, r := range ra.blocks {
		if !ra.keptLocked(i) {
			ra.evictLocked(i, r)
		}
	}
	var have []*raBlockRef
	for i := first; i <= last; i++ {
		r := ra.blocks[i]
		if r == nil {
			have = nil
			break
		}
		have = append(have, r)
	}
	for _, r := range have {
		r.b.ref() // for the reply, or until the fallback below
	}
	if st.seq >= 2 {
		switch {
		case st.window == 0:
			st.window = raStart
		case have != nil:
			st.window = min(2*st.window, raMax) // a hit: the reader keeps up
		}
		ra.startLocked(f, last+1, last+st.window/raBlock)
	}
	ra.mu.Unlock()

	if have != nil {
		if r, ok := reply(dest, off, first, have); ok {
			return r, nil
		}
	}
	n, err := f.ReadAt(dest, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return gofuse.ReadResultData(dest[:n]), err
}

// reply answers [off, off+len(dest)) from the blocks first, first+1...,
// waiting for those still being read, each of which the caller holds a
// reference on; the reply keeps the references until the kernel has the
// bytes. It reports false, dropping the references, if one failed.
func reply(dest []byte, off, first int64, have []*raBlockRef) (*raReply, bool) {
	r := &raReply{held: have}
	want := len(dest)
	for k, ref := range have {
		<-ref.b.done
		if ref.b.err != nil {
			r.Done()
			return nil, false
		}
		if want == 0 {
			continue // a block past the end of the file: keep the references balanced
		}
		blk := ref.b.block(ref.off)
		start := (first + int64(k)) * raBlock
		from := int(min(max(off-start, 0), int64(len(blk))))
		to := min(len(blk), from+want)
		if to > from {
			r.slices = append(r.slices, blk[from:to])
			want -= to - from
		}
		if len(blk) < raBlock {
			want = 0 // the end of the file
		}
	}
	return r, true
}

// raReply is a read's answer made of slices of blocks read ahead. It
// holds a reference on each block's batch until go-fuse has written it to
// the kernel (Done).
type raReply struct {
	slices [][]byte
	held   []*raBlockRef
	once   sync.Once
}

var _ gofuse.ReadResult = (*raReply)(nil)

// Slices hands go-fuse the slices to write to the kernel with one writev.
func (r *raReply) Slices() ([][]byte, gofuse.Status) { return r.slices, gofuse.OK }

// Bytes returns the reply's bytes, assembled in buf if they are in more
// than one block.
func (r *raReply) Bytes(buf []byte) ([]byte, gofuse.Status) {
	if len(r.slices) == 1 {
		return r.slices[0], gofuse.OK
	}
	out := buf[:0]
	for _, s := range r.slices {
		out = append(out, s...)
	}
	return out, gofuse.OK
}

// Size returns the bytes of the reply.
func (r *raReply) Size() int {
	n := 0
	for _, s := range r.slices {
		n += len(s)
	}
	return n
}

// Done releases the blocks.
func (r *raReply) Done() {
	r.once.Do(func() {
		for _, ref := range r.held {
			ref.b.unref()
		}
		r.slices, r.held = nil, nil
	})
}

// startLocked starts reading the blocks from..to, and on to the end of
// to's batch, that are not read or being read, in batches of at most
// raBatch bytes that do not cross a raBatch boundary, as far as the
// mount's budget allows. A window that moves on by a block at a time
// thus still reads whole batches (all the columns they cover at once).
func (ra *readahead) startLocked(f *client.File, from, to int64) {
	const per = raBatch / raBlock
	to = (to/per+1)*per - 1
	for i := from; i <= to; {
		if ra.blocks[i] != nil {
			i++
			continue
		}
		j := i // the batch is blocks i..j
		for j < to && (j+1)%per != 0 && ra.blocks[j+1] == nil {
			j++
		}
		if !ra.startBatch(f, i, j) {
			return
		}
		i = j + 1
	}
}

// startBatch starts reading blocks i..j with one client read.
func (ra *readahead) startBatch(f *client.File, i, j int64) bool {
	fsys := ra.of.fsys
	cost := (j - i + 1) * raBlock
	if !fsys.rab.tryAcquire(cost) {
		return false
	}
	b := &raData{done: make(chan struct{}), cost: cost, free: fsys.rabs, buf: fsys.rabs.get(), held: int(j - i + 1)}
	b.refs.Store(int32(j-i+1) + 1) // the blocks in the map, and the read
	for k := i; k <= j; k++ {
		ra.blocks[k] = &raBlockRef{b: b, off: int(k-i) * raBlock}
	}
	ra.wg.Add(1)
	fsys.bg.Add(1)
	go func(off int64) {
		defer fsys.bg.Done()
		defer ra.wg.Done()
		defer b.unref()
		// Data this mount wrote goes to the data servers first; a
		// write after this point drops the block (openFile.write).
		ra.of.w.wait()
		n, err := f.ReadAt((*b.buf)[:cost], off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		b.n, b.err = n, err
		close(b.done)
	}(i * raBlock)
	return true
}

// evictLocked forgets block i; the last block of a batch to go gives the
// batch's memory back to the budget.
func (ra *readahead) evictLocked(i int64, r *raBlockRef) {
	delete(ra.blocks, i)
	b := r.b
	if b.held--; b.held == 0 && b.cost > 0 {
		ra.of.fsys.rab.release(b.cost)
		b.cost = 0
	}
	b.unref()
}

// keptLocked reports whether some stream may still use block i.
func (ra *readahead) keptLocked(i int64) bool {
	for _, st := range ra.streams {
		if st.keeps(i) {
			return true
		}
	}
	return false
}

// forget ends h's stream (at its release); its blocks go at the next read
// of another stream that cannot use them, or at the last release.
func (ra *readahead) forget(h *handle) {
	ra.mu.Lock()
	delete(ra.streams, h)
	ra.mu.Unlock()
}

// drop forgets every block (after a write, a truncate, or a fresh open)
// and starts every stream again.
func (ra *readahead) drop() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for i, r := range ra.blocks {
		ra.evictLocked(i, r)
	}
	for _, st := range ra.streams {
		*st = raStream{}
	}
}

// close drops the blocks and waits for the background reads.
func (ra *readahead) close() {
	ra.drop()
	ra.wg.Wait()
}
