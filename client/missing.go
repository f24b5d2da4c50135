package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Missing components: a hole is not a loss.
//
// A data server answers a read of a component it does not hold, or holds
// shorter, as it would a hole: with fewer bytes. To tell the two apart
// the writers keep an invariant: before a file size is published
// (LAYOUTCOMMIT at Sync and Close, or a truncate), every component holds
// at least its share of that size (layout.ComponentSize), extended with a
// hole where no writer wrote (rpc.DGrow). A read therefore takes a
// component that ends before its share of the file's size for lost bytes:
// the call fails with EIO (shortError) — the drivers of mirror and rs files
// read around it, and the MDS is told (LAYOUTERROR with ENODATA), which
// checks the component and marks it stale to be rebuilt from redundancy —
// while only the sparse ranges inside a component's share read as zeros.
// Before failing, a reader asks the MDS for the size again: a truncate by
// another client since the open explains a shorter component.

// shortError is a component that ends before its share of the file's
// size. It is an EIO: survivable, read around where there is redundancy.
type shortError struct {
	have, need, size int64
}

func (e *shortError) Error() string {
	return fmt.Sprintf("component lacks bytes the file's size says it holds: it ends at %d, the file's size %d needs %d: %v",
		e.have, e.size, e.need, syscall.EIO)
}

func (e *shortError) Unwrap() error { return syscall.EIO }

// errnoShort marks a LAYOUTERROR of a short component, as the MDS reads it.
const errnoShort = syscall.ENODATA

// checkShort returns a *shortError if component comp, which returned got bytes
// of the n asked at colOff, ends before its share of the file's size.
func (o *fileIO) checkShort(ctx context.Context, comp int, colOff, n int64, got int) error {
	need := min(colOff+n, o.v.lay.ComponentSize(o.size, comp))
	if colOff+int64(got) >= need {
		return nil
	}
	// A truncate by another client since this view's size was known?
	if a, err := o.c.Getattr(ctx, o.ino); err == nil {
		if colOff+int64(got) >= min(colOff+n, o.v.lay.ComponentSize(int64(a.Size), comp)) {
			return nil
		}
	}
	return &shortError{have: colOff + int64(got), need: need, size: o.size}
}

// grow makes every component hold its share of a file of size end
// (rpc.DGrow) unless it is known to (sizes, what commits answered), so
// that end may be published. Stale components are skipped; a failure a
// redundant layout survives is absorbed as a write's (layouterror.go).
func (o *fileIO) grow(ctx context.Context, end int64, sizes map[int]uint64) error {
	var todo []int
	for comp := range o.v.lay.Components() {
		need := o.v.lay.ComponentSize(end, comp)
		if s, ok := sizes[comp]; need == 0 || ok && int64(s) >= need || o.skip(comp) {
			continue
		}
		todo = append(todo, comp)
	}
	return parallel(ctx, len(todo), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		comp := todo[i]
		req := o.v.req(o.ino, comp)
		req.Size = uint64(o.v.lay.ComponentSize(end, comp))
		if err := o.c.rpc.Call(ctx, o.v.addrs[comp], rpc.DGrow, &req, &rpc.DSResp{}); err != nil {
			err = fmt.Errorf("grow component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
			if o.absorb(comp, "commit", int64(req.Size), 0, err) {
				return nil
			}
			o.report(comp, "commit", err)
			return err
		}
		return nil
	})
}

// sizeLog collects the sizes commits answered, for grow.
type sizeLog struct {
	mu sync.Mutex
	m  map[int]uint64
}

func (s *sizeLog) put(comp int, size uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[int]uint64{}
	}
	s.m[comp] = size
}

// isShort reports whether err is a short component's. (Not errors.Is:
// an rpc.Error with EIO matches every error wrapping EIO.)
func isShort(err error) bool {
	var se *shortError
	return errors.As(err, &se)
}
