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
	fault func(Fault) // nil: faults are not reported
}

// Fault is a failed call to one component of a file: a read that a mirror
// served from another copy, that Reed-Solomon reconstructed around, or
// that failed a none file's read; or a write, truncate or commit that
// failed. Calls cancelled because another one failed are not faults.
//
// TODO(layouterror): report faults to the MDS as a flex-files LAYOUTERROR
// so that it marks the component stale (and a failed write of one copy no
// longer fails the write) and rebuilds it. Until then a write fails when
// any component it needs fails.
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
	fn := f.fault
	f.mu.Unlock()
	return &fileIO{c: f.c, v: v, ino: f.ino, fault: fn}
}

// report passes a component fault to the handler, if there is one.
func (o *fileIO) report(comp int, op string, err error) {
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
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		return o.readMirror(ctx, p, off)
	case layout.KindRS:
		return o.readRS(ctx, p, off)
	}
	return o.readStriped(ctx, p, off)
}

// write stores p at off and returns the components it wrote.
func (o *fileIO) write(ctx context.Context, p []byte, off int64) ([]int, error) {
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		return o.writeMirror(ctx, p, off)
	case layout.KindRS:
		return o.writeRS(ctx, p, off)
	}
	return o.writeStriped(ctx, p, off)
}

// truncate sets the file's size on the data servers.
func (o *fileIO) truncate(ctx context.Context, size int64) error {
	switch o.v.lay.Scheme.Kind {
	case layout.KindMirror:
		return o.truncateMirror(ctx, size)
	case layout.KindRS:
		return o.truncateRS(ctx, size)
	}
	return o.truncateStriped(ctx, size)
}
