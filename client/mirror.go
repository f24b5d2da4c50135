package client

import (
	"context"
	"fmt"
)

// This file is the mirror:N layout driver (client-side mirroring, as pNFS
// flex files does): every write goes to all N copies of a column in
// parallel; a read asks one copy and falls back to the next when a copy is
// unreachable or returns EIO (a block failing its checksum), so a flipped
// bit in one copy still reads right. Copies of a column are spread over
// reads by column offset, so a large read uses every copy.

// readMirror reads p at off from one copy of each chunk.
func (o *fileIO) readMirror(ctx context.Context, p []byte, off int64) error {
	l, cs := o.v.lay, int64(o.c.cfg.ChunkSize)
	chs := chunks(l, p, off, cs)
	n := l.Scheme.N
	return parallel(ctx, len(chs), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		ch := chs[i]
		first := int((ch.colOff/cs + int64(ch.col)) % int64(n))
		var err error
		for k := 0; k < n; k++ {
			comp := l.MirrorComponent(ch.col, (first+k)%n)
			if err = o.readComp(ctx, comp, ch.colOff, ch.n, ch.pieces); err == nil {
				return nil
			}
			if !survivable(err) {
				return err
			}
			o.report(comp, "read", err)
		}
		return fmt.Errorf("all %d copies of column %d failed, the last: %w", n, ch.col, err)
	})
}

// writeMirror writes p at off to every copy and returns the components it
// wrote. Any copy failing fails the write (see Fault).
func (o *fileIO) writeMirror(ctx context.Context, p []byte, off int64) ([]int, error) {
	l := o.v.lay
	chs := chunks(l, p, off, int64(o.c.cfg.ChunkSize))
	n := l.Scheme.N
	err := parallel(ctx, len(chs)*n, o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		ch := chs[i/n]
		comp := l.MirrorComponent(ch.col, i%n)
		err := o.writeComp(ctx, comp, ch.colOff, ch.pieces)
		if err != nil {
			o.report(comp, "write", err)
		}
		return err
	})
	cols := touched(l, off, int64(len(p)))
	comps := make([]int, 0, len(cols)*n)
	for r := 0; r < n; r++ {
		for _, col := range cols {
			comps = append(comps, l.MirrorComponent(col, r))
		}
	}
	return comps, err
}

// truncateMirror cuts or extends every copy of every column to the
// column's share of size.
func (o *fileIO) truncateMirror(ctx context.Context, size int64) error {
	l := o.v.lay
	return parallel(ctx, l.Components(), o.c.cfg.MaxInflight, func(ctx context.Context, comp int) error {
		err := o.truncateComp(ctx, comp, l.ColumnSize(size, comp%l.Width))
		if err != nil {
			o.report(comp, "truncate", err)
		}
		return err
	})
}
