package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// LAYOUTERROR: how a mirror:N or rs:K+M file survives the failure of some
// of its components, as a pNFS flex-files client does.
//
// The layout from the MDS names the stale components (rpc.LayoutGetResp
// .Stale): a component call to one of them is not made — a read fails
// with errStale, which the drivers route around like an unreachable data
// server (another copy, or Reed-Solomon reconstruction), and a write,
// truncate or commit skips it.
//
// A write, truncate or commit of a component that fails because its data
// server is unreachable or returned EIO does not fail the call at once:
// the component is recorded as failed, skipped for the rest of the call,
// and reported as a Fault. When the driver is done, settle sends the
// failures to the MDS (rpc.MLayoutError); the MDS marks the components
// stale through raft — refusing if the file could not be read back
// without them (more than M of rs:K+M, every copy of a mirror column) —
// and answers with the layout as it now is, which replaces the file's
// view. Only then does the call succeed: no open after it reads the
// components that missed its bytes, and the MDS rebuilds them once the
// file's writers have closed it. If the MDS refuses or cannot be reached,
// the call fails. A file without redundancy has nothing to route around:
// its failed calls fail, as before.
//
// A read that found a corrupt block (EIO) is reported too, best effort,
// after the read: the MDS marks the component stale and repairs it.

// errStale is the error of a read of a stale component: survivable (the
// drivers read around it) and never reported to the MDS, which knows.
var errStale = fmt.Errorf("component is stale, being rebuilt: %w", rpc.ErrUnavailable)

// failures is what one driver call records of its failed components.
type failures struct {
	mu     sync.Mutex
	failed map[int]rpc.ComponentError // writes, truncates, commits
	reads  map[int]rpc.ComponentError // reads that found a corrupt block
}

// redundant reports whether the layout can route around a component.
func (o *fileIO) redundant() bool { return o.v.lay.Scheme.Kind != layout.KindNone }

// skip reports whether calls to component comp are not to be made: it is
// stale, or failed earlier in this call.
func (o *fileIO) skip(comp int) bool {
	if o.v.stale[comp] {
		return true
	}
	o.fails.mu.Lock()
	defer o.fails.mu.Unlock()
	_, failed := o.fails.failed[comp]
	return failed
}

// absorb records the failure err of op on component comp and reports
// whether the call may go on without it (a redundant layout and an
// unreachable data server or EIO); it reports the fault if so.
func (o *fileIO) absorb(comp int, op string, off, n int64, err error) bool {
	if err == nil {
		return true
	}
	if !o.redundant() || !survivable(err) || errors.Is(err, errStale) {
		return false // the caller reports and returns it
	}
	o.report(comp, op, err)
	o.fails.mu.Lock()
	defer o.fails.mu.Unlock()
	if o.fails.failed == nil {
		o.fails.failed = map[int]rpc.ComponentError{}
	}
	e, ok := o.fails.failed[comp]
	if !ok {
		e = rpc.ComponentError{Comp: uint32(comp), DS: o.v.lay.Targets[comp], Op: op, Errno: uint32(rpc.ToErrno(err)), Off: uint64(off), Len: uint64(n)}
	} else if n > 0 { // widen to cover both ranges
		lo, hi := min(e.Off, uint64(off)), max(e.Off+e.Len, uint64(off+n))
		e.Off, e.Len = lo, hi-lo
	}
	o.fails.failed[comp] = e
	return true
}

// noteRead records a read fault that the MDS should hear of: a corrupt
// block (EIO) in a component that is not known to be stale.
func (o *fileIO) noteRead(comp int, err error) {
	if !o.redundant() || errors.Is(err, errStale) || !errors.Is(err, syscall.EIO) || o.v.stale[comp] {
		return
	}
	o.fails.mu.Lock()
	defer o.fails.mu.Unlock()
	if o.fails.reads == nil {
		o.fails.reads = map[int]rpc.ComponentError{}
	}
	errno := syscall.EIO
	if isShort(err) {
		errno = errnoShort
	}
	o.fails.reads[comp] = rpc.ComponentError{Comp: uint32(comp), DS: o.v.lay.Targets[comp], Op: "read", Errno: uint32(errno)}
}

// settle ends a driver call that returned err: if components failed, it
// reports them to the MDS and the call succeeds only if the MDS marked
// them stale. Read faults are reported best effort.
func (o *fileIO) settle(ctx context.Context, err error) error {
	o.fails.mu.Lock()
	failed := sortedErrors(o.fails.failed)
	reads := sortedErrors(o.fails.reads)
	o.fails.mu.Unlock()
	if len(failed) == 0 {
		if len(reads) > 0 && o.file != nil {
			_ = o.file.layoutError(ctx, o.v, reads) // the read itself succeeded or failed on its own
		}
		return err
	}
	if err != nil {
		return err
	}
	if o.file == nil {
		return fmt.Errorf("%d of %d components failed: %w", len(failed), len(o.v.lay.Targets), syscall.EIO)
	}
	if lerr := o.file.layoutError(ctx, o.v, append(failed, reads...)); lerr != nil {
		comps := make([]uint32, len(failed))
		for i, f := range failed {
			comps[i] = f.Comp
		}
		return fmt.Errorf("components %v of %s failed and could not be marked stale: %w", comps, o.v.lay, lerr)
	}
	return nil
}

func sortedErrors(m map[int]rpc.ComponentError) []rpc.ComponentError {
	out := make([]rpc.ComponentError, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b rpc.ComponentError) int { return int(a.Comp) - int(b.Comp) })
	return out
}

// layoutError sends a LAYOUTERROR for view v and installs the layout the
// MDS answers with.
func (f *File) layoutError(ctx context.Context, v *view, errs []rpc.ComponentError) error {
	var r rpc.LayoutGetResp
	req := rpc.LayoutErrorReq{Ino: f.ino, Gen: v.lay.Generation, Write: f.writable(), Errors: errs, Job: f.tag.Job, Class: uint8(f.tag.Class)}
	if err := f.c.mds(ctx, rpc.MLayoutError, &req, &r); err != nil {
		return err
	}
	nv, err := newView(&r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if f.view == nil || f.view.lay.Generation == nv.lay.Generation {
		f.view = nv
	}
	f.size = max(f.size, int64(r.Attr.Size))
	f.mu.Unlock()
	return nil
}

// staleSet returns the stale components of a LAYOUTGET answer as a set.
func staleSet(r *rpc.LayoutGetResp) map[int]bool {
	if len(r.Stale) == 0 {
		return nil
	}
	m := make(map[int]bool, len(r.Stale))
	for _, c := range r.Stale {
		m[int(c)] = true
	}
	return m
}
