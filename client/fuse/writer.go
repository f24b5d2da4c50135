package fuse

import (
	"sync"

	"github.com/strata-hpc/strata/client"
)

// Write-behind sizing. A buffer holds one stripe row (width x unit) so its
// write goes to every column in parallel, within these bounds.
const (
	minWriteBuf   = 1 << 20
	maxWriteBuf   = 8 << 20
	firstWriteBuf = 64 << 10
	writesPerFile = 16 // buffers of one file in flight at once (bytes are bounded by the mount's budget)
	wbKeep        = 8  // full-size buffers the mount keeps for reuse
)

// wbufs holds a mount's free write-behind buffers, full-size ones of the
// size a layout asks for, at most wbKeep of them. A buffer goes back here
// before its bytes go back to the budget, so that a writer woken by the
// budget finds it: a file streaming data then cycles through the same
// buffers instead of allocating (and growing, and faulting in) new ones.
type wbufs struct {
	mu   sync.Mutex
	free map[int][][]byte // by capacity
	n    int
}

// get returns a free buffer of capacity size, or nil.
func (p *wbufs) get(size int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.free[size]
	if len(l) == 0 {
		return nil
	}
	b := l[len(l)-1]
	p.free[size] = l[:len(l)-1]
	p.n--
	return b[:0]
}

// put keeps b for a later get if it is a full-size buffer (its capacity
// is size) and there is room.
func (p *wbufs) put(b []byte, size int) {
	if cap(b) != size {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= wbKeep {
		return
	}
	if p.free == nil {
		p.free = map[int][][]byte{}
	}
	p.free[size] = append(p.free[size], b[:0])
	p.n++
}

// writer gathers the writes of one open inode into buffers and writes
// each full buffer (or the buffer a non-contiguous write ends) behind, in
// the background, through the shared client.File. Buffers whose ranges
// overlap are written in order; others in parallel, up to writesPerFile
// per file and the mount's budget overall.
//
// The data of a write is copied: the caller's buffer is free when write
// returns.
type writer struct {
	of *openFile

	mu       sync.Mutex
	cond     *sync.Cond
	f        *client.File // the file buf is written to
	buf      []byte       // data gathered, starting at off
	off      int64
	limit    int // most bytes buf takes before it is written (to a row boundary)
	size     int // the buffer size for the current layout
	inflight []span
	full     bool  // the last buffer was written behind full: the file streams
	err      error // the first failed write behind, until drain reports it
}

// span is the byte range [off, end) of a buffer being written.
type span struct{ off, end int64 }

func (w *writer) init(of *openFile) {
	w.of = of
	w.cond = sync.NewCond(&w.mu)
}

// bufSize returns the buffer size for f's layout: a stripe row, or whole
// rows of at least minWriteBuf, or as many units as fit maxWriteBuf.
func bufSize(f *client.File) int {
	l := f.Layout()
	unit, row := int(l.Unit), int(l.Unit)*l.Width
	switch {
	case row <= 0:
		return minWriteBuf
	case row < minWriteBuf:
		return (minWriteBuf + row - 1) / row * row
	case row > maxWriteBuf:
		return max(unit, maxWriteBuf/unit*unit)
	}
	return row
}

// write accepts data at off. After a write behind failed, it refuses
// more data with that error until drain (fsync, close) has reported it.
func (w *writer) write(f *client.File, data []byte, off int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.buf) > 0 && (off != w.off+int64(len(w.buf)) || f != w.f) {
		w.submit()
	}
	for len(data) > 0 {
		if len(w.buf) == 0 {
			w.start(f, off)
		}
		n := min(w.limit-len(w.buf), len(data))
		w.buf = append(w.buf, data[:n]...)
		data, off = data[n:], off+int64(n)
		if len(w.buf) == w.limit {
			w.submit()
		}
	}
	return nil
}

// start begins a buffer at off, ending at the next buffer-size boundary
// of the file so that buffers line up with stripe rows. The first buffer
// of a file starts small and grows with the data, so that many files
// written a little at a time do not each hold a whole row; once a buffer
// was written behind full, the file streams, and the next ones are
// full-size from the start (from the mount's free ones if it has any), so
// no byte is copied again by a buffer's growth.
func (w *writer) start(f *client.File, off int64) {
	if size := bufSize(f); size != w.size {
		w.size, w.full = size, false
	}
	switch {
	case !w.full:
		w.buf = make([]byte, 0, min(w.size, firstWriteBuf))
	default:
		if w.buf = w.of.fsys.wbufs.get(w.size); w.buf == nil {
			w.buf = make([]byte, 0, w.size)
		}
	}
	w.f, w.off = f, off
	w.limit = w.size - int(off%int64(w.size))
}

// submit starts writing the buffer in the background. It waits while a
// buffer in flight overlaps it or the file has writesPerFile in flight,
// then for the mount's budget. Called with w.mu held.
func (w *writer) submit() {
	b, off, f, size := w.buf, w.off, w.f, w.size
	w.buf, w.f = nil, nil
	w.full = len(b) == w.limit
	sp := span{off: off, end: off + int64(len(b))}
	for w.overlaps(sp) || len(w.inflight) >= writesPerFile {
		w.cond.Wait()
	}
	w.inflight = append(w.inflight, sp)
	fsys := w.of.fsys
	cost := int64(cap(b))
	fsys.wb.acquire(cost)
	fsys.bg.Add(1)
	go func() {
		defer fsys.bg.Done()
		_, err := f.WriteAt(b, off)
		fsys.wbufs.put(b, size)
		fsys.wb.release(cost)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.remove(sp)
		if err != nil && w.err == nil {
			w.err = err
		}
		w.cond.Broadcast()
	}()
}

func (w *writer) overlaps(sp span) bool {
	for _, s := range w.inflight {
		if s.off < sp.end && sp.off < s.end {
			return true
		}
	}
	return false
}

func (w *writer) remove(sp span) {
	for i, s := range w.inflight {
		if s == sp {
			w.inflight = append(w.inflight[:i], w.inflight[i+1:]...)
			return
		}
	}
}

// wait writes the buffer and waits until nothing is in flight, keeping an
// error for drain to report.
func (w *writer) wait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

// drain is wait, returning (and clearing) the first error of a write
// behind since the last drain.
func (w *writer) drain() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

func (w *writer) flushLocked() {
	if len(w.buf) > 0 {
		w.submit()
	}
	for len(w.inflight) > 0 {
		w.cond.Wait()
	}
}

// pendingEnd is the end of the data accepted and not yet written to the
// data servers, 0 if none.
func (w *writer) pendingEnd() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var end int64
	if len(w.buf) > 0 {
		end = w.off + int64(len(w.buf))
	}
	for _, s := range w.inflight {
		end = max(end, s.end)
	}
	return end
}
