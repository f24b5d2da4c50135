package client

import (
	"context"

	"github.com/strata-hpc/strata/layout"
)

// writeRS writes p at off to an rs:K+M file and returns the components it
// wrote. Whole rows are encoded from p and their K+M units written in
// parallel; a row the write covers in part is read, merged, re-encoded,
// and its changed data bytes and parity rewritten (see erasure.go for
// concurrent writers). Rows are independent, so their spans run in
// parallel. Any component failing fails the write (see Fault).
func (o *fileIO) writeRS(ctx context.Context, p []byte, off int64) ([]int, error) {
	tasks := planWrite(o.v.lay, int64(o.c.cfg.ChunkSize), off, int64(len(p)))
	k, m := o.shards()
	limit := max(2, 2*o.c.cfg.MaxInflight/(k+m))
	err := parallel(ctx, len(tasks), limit, func(ctx context.Context, i int) error {
		if tasks[i].full {
			return o.writeFull(ctx, p, off, tasks[i].sp)
		}
		return o.writePartial(ctx, p, off, tasks[i].sp)
	})
	comps := touched(o.v.lay, off, int64(len(p)))
	for j := 0; j < m; j++ {
		comps = append(comps, k+j)
	}
	return comps, err
}

// writeSpan is a span to write: whole rows, or a window of one row that
// the write covers in part (read, merge, re-encode).
type writeSpan struct {
	sp   span
	full bool
}

// planWrite cuts a write of n bytes at off into spans no two of which
// share a byte of any component, so they can run in parallel: runs of
// whole rows of at most chunk bytes per column (or windows of one row if
// a unit is larger), and for a row the write covers in part, windows of
// at most chunk bytes over the in-unit bytes it touches in any unit.
func planWrite(l layout.Layout, chunk, off, n int64) []writeSpan {
	u, row, end := l.Unit, l.RowSize(), off+n
	var out []writeSpan
	add := func(r, lo, hi int64, full bool) {
		for x := lo; x < hi; x += chunk {
			out = append(out, writeSpan{span{row: r, rows: 1, lo: x, hi: min(x+chunk, hi)}, full})
		}
	}
	for r := off / row; r*row < end; {
		lo, hi := max(off, r*row), min(end, (r+1)*row)
		if hi-lo == row { // whole rows from r on
			last := end / row
			if per := chunk / u; per >= 1 {
				for ; r < last; r += per {
					out = append(out, writeSpan{span{row: r, rows: min(per, last-r), lo: 0, hi: u}, true})
				}
			} else {
				for ; r < last; r++ {
					add(r, 0, u, true)
				}
			}
			r = last
			continue
		}
		a, b := lo-r*row, hi-r*row // the write's bytes within the row
		c0, c1 := a/u, (b-1)/u
		switch {
		case c0 == c1:
			add(r, a-c0*u, b-c0*u, false)
		case c1-c0 == 1 && (b-1)%u+1 < a%u: // the tail of one unit and the head of the next
			add(r, 0, (b-1)%u+1, false)
			add(r, a%u, u, false)
		default:
			add(r, 0, u, false)
		}
		r++
	}
	return out
}

// writeFull encodes the rows of sp, all inside p (file offset off), and
// writes their data and parity.
func (o *fileIO) writeFull(ctx context.Context, p []byte, off int64, sp span) error {
	k, m := o.shards()
	w := sp.width()
	bufs := o.getBufs(sp.colLen())
	defer bufs.put()
	sh := make([][]byte, k+m)
	for i := int64(0); i < sp.rows; i++ {
		for c := 0; c < k; c++ {
			fo := o.fileOff(sp.row+i, c) + sp.lo - off
			sh[c] = p[fo : fo+w]
		}
		for j := 0; j < m; j++ {
			sh[k+j] = bufs.b[k+j][i*w : (i+1)*w]
		}
		if err := o.v.codec.Encode(sh); err != nil {
			return err
		}
	}
	return parallel(ctx, k+m, k+m, func(ctx context.Context, comp int) error {
		var pieces [][]byte
		if comp < k {
			pieces = make([][]byte, sp.rows)
			for i := range pieces {
				fo := o.fileOff(sp.row+int64(i), comp) + sp.lo - off
				pieces[i] = p[fo : fo+w]
			}
		} else {
			pieces = [][]byte{bufs.b[comp]}
		}
		err := o.writeComp(ctx, comp, sp.colOff(o.v.lay.Unit), pieces)
		if err != nil {
			o.report(comp, "write", err)
		}
		return err
	})
}

// writePartial writes the bytes of p (file offset off) that fall in
// window sp of one row: it gathers the row window's current data (rebuilt
// if a data server is down), merges p's bytes, re-encodes, and writes the
// changed data bytes and every parity shard of the window.
func (o *fileIO) writePartial(ctx context.Context, p []byte, off int64, sp span) error {
	k, m := o.shards()
	w, end := sp.width(), off+int64(len(p))
	bufs := o.getBufs(w)
	defer bufs.put()
	sh := make([][]byte, k+m)
	flags := make([]bool, k+m+k)
	bad, want := flags[:k+m], flags[k+m:]
	// cover returns the part of data shard c that p overwrites, as file
	// offsets [s, e), and the shard's file offset.
	cover := func(c int) (s, e, base int64) {
		base = o.fileOff(sp.row, c) + sp.lo
		return max(base, off), min(base+w, end), base
	}
	for c := 0; c < k; c++ {
		s, e, _ := cover(c)
		want[c] = e-s < w // some old bytes survive
	}
	if err := o.gather(ctx, sp, sh, bufs.b, want, bad); err != nil {
		return err
	}
	for c := 0; c < k; c++ {
		s, e, base := cover(c)
		if s >= e {
			continue
		}
		if sh[c] == nil { // wholly overwritten: its old bytes were not needed
			sh[c] = bufs.b[c][:w]
		}
		copy(sh[c][s-base:], p[s-off:e-off])
	}
	for j := 0; j < m; j++ {
		sh[k+j] = bufs.b[k+j][:w]
	}
	if err := o.v.codec.Encode(sh); err != nil {
		return err
	}
	u := o.v.lay.Unit
	return parallel(ctx, k+m, k+m, func(ctx context.Context, comp int) error {
		var err error
		if comp < k {
			s, e, base := cover(comp)
			if s >= e {
				return nil
			}
			err = o.writeComp(ctx, comp, sp.colOff(u)+s-base, [][]byte{p[s-off : e-off]})
		} else {
			err = o.writeComp(ctx, comp, sp.colOff(u), [][]byte{sh[comp]})
		}
		if err != nil {
			o.report(comp, "write", err)
		}
		return err
	})
}

// truncateRS cuts or extends each data column to its share of size and
// each parity column to whole units (layout.ParitySize), then recomputes
// the parity of the row size cuts, from its surviving data (zeros past
// size), and commits it.
func (o *fileIO) truncateRS(ctx context.Context, size int64) error {
	l := o.v.lay
	k, m := o.shards()
	err := parallel(ctx, k+m, o.c.cfg.MaxInflight, func(ctx context.Context, comp int) error {
		n := l.ParitySize(size)
		if comp < k {
			n = l.ColumnSize(size, comp)
		}
		err := o.truncateComp(ctx, comp, n)
		if err != nil {
			o.report(comp, "truncate", err)
		}
		return err
	})
	row := l.RowSize()
	if err != nil || size%row == 0 {
		return err
	}
	spans := o.windows(size/row, 0, l.Unit)
	err = parallel(ctx, len(spans), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		return o.reencode(ctx, spans[i], size)
	})
	if err != nil {
		return err
	}
	parity := make(map[int]bool, m)
	for j := 0; j < m; j++ {
		parity[k+j] = true
	}
	return o.commit(ctx, parity, &sizeLog{})
}

// reencode recomputes and writes the parity of window sp of one row from
// the data columns alone (the parity may be stale), with the file's bytes
// from size on taken as zeros.
func (o *fileIO) reencode(ctx context.Context, sp span, size int64) error {
	k, m := o.shards()
	w := sp.width()
	bufs := o.getBufs(w)
	defer bufs.put()
	sh := make([][]byte, k+m)
	flags := make([]bool, k+m+k)
	bad, want := flags[:k+m], flags[k+m:]
	for i := range want {
		want[i] = true
	}
	for j := 0; j < m; j++ {
		bad[k+j] = true
	}
	if err := o.gather(ctx, sp, sh, bufs.b, want, bad); err != nil {
		return err
	}
	for c := 0; c < k; c++ {
		if base := o.fileOff(sp.row, c) + sp.lo; base+w > size {
			clear(sh[c][max(0, size-base):])
		}
	}
	for j := 0; j < m; j++ {
		sh[k+j] = bufs.b[k+j][:w]
	}
	if err := o.v.codec.Encode(sh); err != nil {
		return err
	}
	u := o.v.lay.Unit
	return parallel(ctx, m, m, func(ctx context.Context, j int) error {
		err := o.writeComp(ctx, k+j, sp.colOff(u), [][]byte{sh[k+j]})
		if err != nil {
			o.report(k+j, "write", err)
		}
		return err
	})
}
