package client

import (
	"context"
	"errors"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// A layout driver moves a file's bytes between the caller and the data
// servers for one redundancy scheme: stripe.go (none), mirror.go
// (mirror:N) and erasure*.go (rs:K+M). Each has read, write (returning the
// components it wrote, for Sync to commit) and truncate; commit serves all.
// File sizes and LAYOUTCOMMIT are the File's business and the same for
// every scheme.

// fileIO is what a driver needs for one call: the client, the file's view
// and inode, and where component faults go.
type fileIO struct {
	c     *Client
	v     *view
	ino   uint64
	size  int64       // the file's size as the handle knew it at the call
	fault func(Fault) // nil: faults are not reported
	file  *File       // where LAYOUTERROR answers go (layouterror.go)
	fails failures
}

// Fault is a failed call to one component of a file: a read that a mirror
// served from another copy, that Reed-Solomon reconstructed around, or
// that failed a none file's read; or a write, truncate or commit that
// failed. Calls cancelled because another one failed are not faults.
//
// Faults of mirror and rs files are also reported to the MDS as a
// flex-files LAYOUTERROR (layouterror.go): a write, truncate or commit
// that failed on components the scheme can do without succeeds once the
// MDS has marked them stale, and the MDS rebuilds them.
type Fault struct {
	Ino       uint64
	Gen       uint64
	Component int    // index into the layout's Targets
	DS        string // data server id
	Op        string // "read", "write", "truncate" or "commit"
	Err       error
}

// SetFaultHandler makes fn receive every component fault of this file's
// I/O (see Fault). fn is called from I/O goroutines, concurrently; it must
// be quick. nil stops the reports.
func (f *File) SetFaultHandler(fn func(Fault)) {
	f.mu.Lock()
	f.fault = fn
	f.mu.Unlock()
}

// io returns the driver call state for view v.
func (f *File) io(v *view) *fileIO {
	f.mu.Lock()
	fn, size := f.fault, f.size
	f.mu.Unlock()
	return &fileIO{c: f.c, v: v, ino: f.ino, size: size, fault: fn, file: f}
}

// report passes a component fault to the handler, if there is one, and
// notes a corrupt block for the MDS.
func (o *fileIO) report(comp int, op string, err error) {
	if op == "read" {
		o.noteRead(comp, err)
	}
	if o.fault != nil && !errors.Is(err, context.Canceled) {
		o.fault(Fault{Ino: o.ino, Gen: o.v.lay.Generation, Component: comp, DS: o.v.lay.Targets[comp], Op: op, Err: err})
	}
}

// survivable reports whether a redundant layout may route around err from
// one component: the data server is unreachable, or it found a block that
// fails its checksum (EIO). Anything else (an expired capability, a
// cancelled context, ENOSPC) is the caller's answer.
func survivable(err error) bool {
	return errors.Is(err, rpc.ErrUnavailable) || errors.Is(err, syscall.EIO)
}

// read fills p with the file's bytes at off (within the file's size).
func (o *fileIO) read(ctx context.Context, p []byte, off int64) error {
	var err error
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		err = o.readMirror(ctx, p, off)
	case layout.KindRS:
		err = o.readRS(ctx, p, off)
	default:
		err = o.readStriped(ctx, p, off)
	}
	return o.settle(ctx, err)
}

// write stores p at off and returns the components it wrote.
func (o *fileIO) write(ctx context.Context, p []byte, off int64) ([]int, error) {
	var comps []int
	var err error
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		comps, err = o.writeMirror(ctx, p, off)
	case layout.KindRS:
		comps, err = o.writeRS(ctx, p, off)
	default:
		comps, err = o.writeStriped(ctx, p, off)
	}
	return comps, o.settle(ctx, err)
}

// truncate sets the file's size on the data servers.
func (o *fileIO) truncate(ctx context.Context, size int64) error {
	o.size = size // the components' shares once cut or extended
	var err error
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		err = o.truncateMirror(ctx, size)
	case layout.KindRS:
		err = o.truncateRS(ctx, size)
	default:
		err = o.truncateStriped(ctx, size)
	}
	return o.settle(ctx, err)
}

// sync commits the given components (fsync on their data servers) and
// makes every component hold its share of a file of size end (missing.go).
func (o *fileIO) sync(ctx context.Context, comps map[int]bool, end int64) error {
	var sizes sizeLog
	err := o.commit(ctx, comps, &sizes)
	if err == nil && end > 0 {
		err = o.grow(ctx, end, sizes.m)
	}
	return o.settle(ctx, err)
}
