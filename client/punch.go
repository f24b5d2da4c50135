package client

import (
	"context"
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Punching holes (fallocate(2) FALLOC_FL_PUNCH_HOLE). A punched range
// reads as zeros and the data servers give back its space: each component
// deallocates its share of the range (rpc.DPunch), its whole blocks
// becoming holes, which the DS knows (a stored CRC of 0 over zeros) and
// serves as zeros. A hole is part of a component that is there; a missing
// component is still a loss (missing.go). For rs:K+M, whole stripe rows
// are punched in every component, parity included (the parity of zeros is
// zeros); the parts of rows at either end are written as zeros through the
// driver, which keeps their parity right.

// Punch makes n bytes at off read as zeros and releases their space on the
// data servers. The file's size does not change: bytes past its end are
// left alone. The components punched are committed by the next Sync or
// Close.
func (f *File) Punch(off, n int64) error {
	if !f.writable() {
		return f.err("punch", rpc.Errorf(syscall.EBADF, "file not open for writing"))
	}
	if off < 0 || n < 0 {
		return f.err("punch", rpc.Errorf(syscall.EINVAL, "negative offset or length"))
	}
	f.mu.Lock()
	size := f.size
	f.mu.Unlock()
	n = min(n, max(size-off, 0))
	if n == 0 {
		return nil
	}
	if done, err := f.punchInline(off, n); err != nil {
		return f.err("punch", err)
	} else if done {
		return nil
	}
	var comps []int
	err := f.withView(func(v *view) error {
		var err error
		comps, err = f.io(v).punch(f.ctx, off, n)
		return err
	})
	if err != nil {
		return f.err("punch", err)
	}
	f.mu.Lock()
	for _, c := range comps {
		f.dirty[c] = true
	}
	f.mu.Unlock()
	return nil
}

// punch zeros [off, off+n), within the file, and returns the components
// it changed.
func (o *fileIO) punch(ctx context.Context, off, n int64) ([]int, error) {
	l := o.v.lay
	if l.Scheme.Kind != layout.KindRS {
		comps, err := o.punchRows(ctx, off, n)
		return comps, o.settle(ctx, err)
	}
	row := l.RowSize()
	first, last := (off+row-1)/row*row, (off+n)/row*row // the whole rows
	if first >= last {
		first, last = off+n, off+n // no whole row: zeros only
	}
	var comps []int
	zero := func(from, to int64) error {
		for from < to {
			p := make([]byte, min(to-from, 4<<20))
			cs, err := o.writeRS(ctx, p, from)
			comps = append(comps, cs...)
			if err != nil {
				return err
			}
			from += int64(len(p))
		}
		return nil
	}
	err := zero(off, first)
	if err == nil && last > first {
		var cs []int
		cs, err = o.punchRows(ctx, first, last-first)
		comps = append(comps, cs...)
	}
	if err == nil {
		err = zero(max(last, first), off+n)
	}
	return comps, o.settle(ctx, err)
}

// punchRows asks every component holding a part of [off, off+n) to punch
// it: for rs:K+M the range must be whole rows, and parity components punch
// the same column range as the data columns.
func (o *fileIO) punchRows(ctx context.Context, off, n int64) ([]int, error) {
	l := o.v.lay
	type span struct {
		comp     int
		from, to int64
	}
	var spans []span
	for col, exts := range l.Columns(off, n) {
		if len(exts) == 0 {
			continue
		}
		last := exts[len(exts)-1]
		from, to := exts[0].ColOff, last.ColOff+last.Len
		switch l.Scheme.Kind {
		case layout.KindMirror:
			for r := range l.Scheme.N {
				spans = append(spans, span{l.MirrorComponent(col, r), from, to})
			}
		default:
			spans = append(spans, span{col, from, to})
		}
	}
	if l.Scheme.Kind == layout.KindRS {
		from, to := off/l.RowSize()*l.Unit, (off+n)/l.RowSize()*l.Unit
		for comp := l.Width; comp < l.Components(); comp++ {
			spans = append(spans, span{comp, from, to})
		}
	}
	comps := make([]int, len(spans))
	err := parallel(ctx, len(spans), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		s := spans[i]
		comps[i] = s.comp
		if o.skip(s.comp) {
			return nil
		}
		req := o.v.req(o.ino, s.comp)
		req.Off, req.Len = uint64(s.from), uint64(s.to-s.from)
		if err := o.c.rpc.Call(ctx, o.v.addrs[s.comp], rpc.DPunch, &req, &rpc.DSResp{}); err != nil {
			err = fmt.Errorf("punch component %d on %s: %w", s.comp, l.Targets[s.comp], err)
			if o.absorb(s.comp, "punch", s.from, s.to-s.from, err) {
				return nil
			}
			o.report(s.comp, "punch", err)
			return err
		}
		return nil
	})
	return comps, err
}
