package fuse

import (
	"errors"
	"io"
	"sync"

	"github.com/strata-hpc/strata/client"
)

// Read-ahead in the daemon. The kernel reads a file sequentially one
// request (1 MiB) at a time or little more; each request would wait for a
// data server round trip. When reads of an open file go forward, the next
// few blocks are read from the data servers in the background, in parallel
// over the columns, so the kernel's next requests find them in memory.
const (
	raBlock = 1 << 20 // size and alignment of a read-ahead block
	raDepth = 8       // blocks read ahead of a sequential reader
)

// readahead holds one open inode's blocks read ahead. Blocks are immutable
// once read. A write or truncate on this mount drops them all after the
// change is in the writer, and a block's read first waits for the writer,
// so no block misses a change made here; close-to-open covers changes
// made elsewhere (open drops the blocks too).
type readahead struct {
	of *openFile

	mu     sync.Mutex
	next   int64             // where a sequential reader reads next
	seq    int               // reads in a row that went forward; two start read-ahead
	blocks map[int64]*raData // by block index
	wg     sync.WaitGroup    // background reads
}

// raData is a block being read or read.
type raData struct {
	done chan struct{} // closed when data, n and err are set
	data []byte
	n    int
	err  error
	cost int64 // bytes taken from the mount's budget
}

func (ra *readahead) init(of *openFile) {
	ra.of = of
	ra.blocks = map[int64]*raData{}
}

// read reads len(dest) bytes at off through f, from blocks read ahead
// where it can, and starts reading ahead of a forward-moving reader. It
// returns the bytes read: in dest, or, when one block holds them all, in
// that block (blocks are never written again, so the caller may keep the
// slice). It returns fewer bytes only at the end of the file.
func (ra *readahead) read(f *client.File, dest []byte, off int64) ([]byte, error) {
	end := off + int64(len(dest))
	first, last := off/raBlock, (end-1)/raBlock
	ra.mu.Lock()
	if off >= ra.next-raBlock && off <= ra.next+raBlock {
		ra.seq++
		ra.next = max(ra.next, end)
	} else {
		ra.seq, ra.next = 0, end
	}
	// Keep one block behind (the kernel may answer requests out of order)
	// and what a reader at off can still use.
	for i, b := range ra.blocks {
		if i < first-1 || i > last+2*raDepth {
			ra.evictLocked(i, b)
		}
	}
	var have []*raData
	for i := first; i <= last; i++ {
		b := ra.blocks[i]
		if b == nil {
			have = nil
			break
		}
		have = append(have, b)
	}
	if ra.seq >= 2 {
		ra.startLocked(f, last+1, last+raDepth)
	}
	ra.mu.Unlock()

	if len(have) == 1 {
		b := have[0]
		<-b.done
		if b.err == nil {
			from := int(off - first*raBlock)
			to := min(from+len(dest), b.n)
			return b.data[min(from, to):to], nil
		}
	} else if have != nil {
		if n, ok := copyBlocks(dest, off, first, have); ok {
			return dest[:n], nil
		}
	}
	n, err := f.ReadAt(dest, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return dest[:n], err
}

// copyBlocks copies [off, off+len(dest)) from the blocks first, first+1...,
// waiting for those still being read. It reports false if one failed.
func copyBlocks(dest []byte, off, first int64, blocks []*raData) (int, bool) {
	n := 0
	for k, b := range blocks {
		<-b.done
		if b.err != nil {
			return 0, false
		}
		start := (first + int64(k)) * raBlock
		from := int(max(off+int64(n)-start, 0))
		if from >= b.n {
			return n, true // the end of the file
		}
		n += copy(dest[n:], b.data[from:b.n])
		if b.n < raBlock || n == len(dest) {
			return n, true
		}
	}
	return n, true
}

// startLocked starts reading blocks from..to that are not read or being
// read, as far as the mount's budget allows.
func (ra *readahead) startLocked(f *client.File, from, to int64) {
	fsys := ra.of.fsys
	for i := from; i <= to; i++ {
		if ra.blocks[i] != nil {
			continue
		}
		if !fsys.rab.tryAcquire(raBlock) {
			return
		}
		b := &raData{done: make(chan struct{}), cost: raBlock}
		ra.blocks[i] = b
		ra.wg.Add(1)
		fsys.bg.Add(1)
		go func(off int64) {
			defer fsys.bg.Done()
			defer ra.wg.Done()
			// Data this mount wrote goes to the data servers first; a
			// write after this point drops the block (openFile.write).
			ra.of.w.wait()
			buf := make([]byte, raBlock)
			n, err := f.ReadAt(buf, off)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			b.data, b.n, b.err = buf, n, err
			close(b.done)
		}(i * raBlock)
	}
}

// evictLocked forgets block i and gives its memory back to the budget.
func (ra *readahead) evictLocked(i int64, b *raData) {
	delete(ra.blocks, i)
	if b.cost > 0 {
		ra.of.fsys.rab.release(b.cost)
		b.cost = 0
	}
}

// drop forgets every block (after a write, a truncate, or a fresh open).
func (ra *readahead) drop() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for i, b := range ra.blocks {
		ra.evictLocked(i, b)
	}
	ra.seq, ra.next = 0, 0
}

// close drops the blocks and waits for the background reads.
func (ra *readahead) close() {
	ra.drop()
	ra.wg.Wait()
}
