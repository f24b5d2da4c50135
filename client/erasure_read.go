package client

import (
	"context"
)

// readRS reads p at off from the data columns of an rs:K+M file, as the
// striped driver does. A chunk that fails because its data server is
// unreachable or returns EIO is rebuilt (a degraded read): for each row
// window it covers, the same window of the other data columns, taken from
// p where this read fetched it, and of a parity unit give any K shards to
// reconstruct from. A sequential degraded read so reads each surviving
// byte once, plus parity in place of the lost column.
func (o *fileIO) readRS(ctx context.Context, p []byte, off int64) error {
	l := o.v.lay
	chs := chunks(l, p, off, int64(o.c.cfg.ChunkSize))
	failed := make([]bool, len(chs))
	err := parallel(ctx, len(chs), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		ch := chs[i]
		err := o.readComp(ctx, ch.col, ch.colOff, ch.n, ch.pieces)
		if err != nil && survivable(err) {
			o.report(ch.col, "read", err)
			failed[i] = true
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	k, m := o.shards()
	bad := make([]bool, k+m) // columns whose bytes in p are not (yet) right
	var lost []lostSpan
	for i, f := range failed {
		if !f {
			continue
		}
		ch := chs[i]
		bad[ch.col] = true
		for x, end := ch.colOff, ch.colOff+ch.n; x < end; {
			sp := span{row: x / l.Unit, rows: 1, lo: x % l.Unit}
			sp.hi = min(l.Unit, sp.lo+end-x)
			lost = append(lost, lostSpan{sp, ch.col})
			x += sp.width()
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return parallel(ctx, len(lost), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		return o.rebuildInto(ctx, p, off, lost[i], bad)
	})
}

// lostSpan is a window of data column col that a read could not fetch.
type lostSpan struct {
	sp  span
	col int
}

// rebuildInto reconstructs lost window ls into p (file offset off). bad
// marks the columns whose bytes in p are not to be used (some chunk of
// theirs failed); it is shared and only read. Their data servers may
// still serve this window.
func (o *fileIO) rebuildInto(ctx context.Context, p []byte, off int64, ls lostSpan, bad []bool) error {
	k, m := o.shards()
	w := ls.sp.width()
	bufs := o.getBufs(w)
	defer bufs.put()
	sh := make([][]byte, k+m)
	flags := make([]bool, k+m+k)
	myBad, want := flags[:k+m], flags[k+m:]
	myBad[ls.col], want[ls.col] = true, true // the others may still read here
	end := off + int64(len(p))
	for c := 0; c < k; c++ {
		fo := o.fileOff(ls.sp.row, c) + ls.sp.lo
		if inP := fo >= off && fo+w <= end; inP && c != ls.col && !bad[c] {
			sh[c] = p[fo-off : fo-off+w]
		} else if c == ls.col {
			bufs.b[c] = p[fo-off : fo-off+w : fo-off+w] // rebuilt in place
		}
	}
	return o.gather(ctx, ls.sp, sh, bufs.b, want, myBad)
}
