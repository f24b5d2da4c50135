package ds

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// Early writeback: once a write's bytes are in a component's file, the
// store asks the kernel to start writing them to disk (startWriteback,
// rebuild_writeback.go), from a goroutine of its own so that no client's
// write waits for the disk queue. The fsync of a commit then finds most
// of a file's bytes on disk or on their way instead of starting all of
// them at once: the disk works while the client is still sending.
// Durability is what it was: only a commit (fsync of the data and
// checksum files) makes bytes durable, and it still writes whatever the
// early writeback did not.

// writebackQueue bounds the ranges waiting for the writeback goroutine;
// a range that finds the queue full is left to the commit's fsync.
const writebackQueue = 256

// writeback starts the writeback of ranges of files. Its goroutine is
// owned by the store, which stops it in close.
type writeback struct {
	mu      sync.Mutex // guards closed and sends on ranges
	closed  bool
	ranges  chan wbRange
	done    chan struct{}
	skipAll atomic.Bool // closing: what is queued is left to fsync
}

type wbRange struct {
	f      File
	off, n int64
}

func newWriteback() *writeback {
	w := &writeback{ranges: make(chan wbRange, writebackQueue), done: make(chan struct{})}
	go w.run()
	return w
}

// start queues n bytes of f at off for writeback; a File without a
// descriptor (a test's), a full queue or a closed writeback drops them.
func (w *writeback) start(f File, off, n int64) {
	if _, ok := f.(syscall.Conn); !ok || n <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case w.ranges <- wbRange{f: f, off: off, n: n}:
	default:
	}
}

func (w *writeback) run() {
	defer close(w.done)
	for r := range w.ranges {
		if !w.skipAll.Load() {
			startWriteback(r.f, r.off, r.n) // a file closed meanwhile is left alone
		}
	}
}

// close stops the goroutine; the ranges still queued are dropped.
func (w *writeback) close() {
	w.skipAll.Store(true)
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ranges)
	}
	w.mu.Unlock()
	<-w.done
}
