package client

import (
	"context"
	"fmt"
	"sync"
	"syscall"
)

// This file holds what the rs:K+M layout driver (erasure_read.go,
// erasure_write.go) shares: spans of stripe rows, shard buffers, and
// gather, which fetches a row window's data shards, rebuilding the ones it
// cannot read from any K of the row's K+M components.
//
// Layout (see layout.Layout): data column c is component c and holds the
// file's bytes as a none layout of width K would; parity unit j of row r
// is at column offset r*Unit of component K+j. Reed-Solomon works byte by
// byte, so any window [lo, hi) of a row's units is a code word on its own:
// the driver encodes, reads and rebuilds windows of at most ChunkSize.
//
// Concurrency: writers to disjoint stripe rows are correct, as writers to
// disjoint ranges of a none file are. A write that covers part of a row
// reads the rest of the row, merges and rewrites the parity, so two
// writers inside one row at once (even to disjoint bytes) can lose each
// other's parity update; like ROMIO on a RAID, they must hold a byte-range
// lock on the whole row (File locks, or MPI-IO's collective buffering
// aligned to rows).

// span is a block of stripe rows: rows [row, row+rows) and, in each of
// their units, the bytes [lo, hi). Either rows == 1 or [lo, hi) is the
// whole unit, so each component's share of a span is one contiguous
// column range of colLen bytes at colOff.
type span struct {
	row, rows int64
	lo, hi    int64
}

func (s span) width() int64            { return s.hi - s.lo }
func (s span) colOff(unit int64) int64 { return s.row*unit + s.lo }
func (s span) colLen() int64           { return s.rows * (s.hi - s.lo) }
func (s span) String() string {
	return fmt.Sprintf("rows %d+%d bytes [%d,%d)", s.row, s.rows, s.lo, s.hi)
}
func (o *fileIO) rowSize() int64               { return o.v.lay.RowSize() }
func (o *fileIO) shards() (k, m int)           { return o.v.codec.K(), o.v.codec.M() }
func (o *fileIO) window() int64                { return min(o.v.lay.Unit, int64(o.c.cfg.ChunkSize)) }
func (o *fileIO) fileOff(r int64, c int) int64 { return r*o.rowSize() + int64(c)*o.v.lay.Unit }

// windows returns the spans of row r that cover the in-unit bytes
// [lo, hi), each at most the driver's window wide.
func (o *fileIO) windows(r, lo, hi int64) []span {
	var out []span
	for x, w := lo, o.window(); x < hi; x += w {
		out = append(out, span{row: r, rows: 1, lo: x, hi: min(x+w, hi)})
	}
	return out
}

// shardPool holds shard buffers (*[]byte) of ChunkSize capacity: every
// shard a span needs fits one.
var shardPool sync.Pool

// rowBufs is one buffer of n bytes per component of a span, from
// shardPool; put returns them.
type rowBufs struct {
	b    [][]byte
	pool []*[]byte
}

func (o *fileIO) getBufs(n int64) rowBufs {
	k, m := o.shards()
	bs := rowBufs{b: make([][]byte, k+m), pool: make([]*[]byte, k+m)}
	for i := range bs.b {
		b, ok := shardPool.Get().(*[]byte)
		if !ok || int64(cap(*b)) < n {
			nb := make([]byte, 0, max(n, int64(o.c.cfg.ChunkSize)))
			b = &nb
		}
		bs.pool[i], bs.b[i] = b, (*b)[:n]
	}
	return bs
}

func (bs rowBufs) put() {
	for _, b := range bs.pool {
		shardPool.Put(b)
	}
}

// gather makes sh[i] hold the current bytes of data shard i of span sp
// (one row) for every i < K with want[i] set. On entry a non-nil sh[i] is
// a shard already known (it is only read); bufs[i] is memory of at least
// the span's width for shard i. Wanted shards are read directly unless
// bad[i]; those that fail (unreachable, or EIO) are marked bad and rebuilt
// from any K shards known or readable, parity first. Components known to
// be stale must be marked bad by the caller.
func (o *fileIO) gather(ctx context.Context, sp span, sh [][]byte, bufs [][]byte, want, bad []bool) error {
	k, m := o.shards()
	w, colOff := sp.width(), sp.colOff(o.v.lay.Unit)
	readSome := func(list []int) error {
		return parallel(ctx, len(list), len(list), func(ctx context.Context, i int) error {
			comp := list[i]
			err := o.readComp(ctx, comp, colOff, w, [][]byte{bufs[comp][:w]})
			switch {
			case err == nil:
				sh[comp] = bufs[comp][:w]
			case survivable(err):
				o.report(comp, "read", err)
				bad[comp] = true
			default:
				return err
			}
			return nil
		})
	}
	var list [16]int
	direct := list[:0]
	for i := 0; i < k; i++ {
		if want[i] && sh[i] == nil && !bad[i] {
			direct = append(direct, i)
		}
	}
	if err := readSome(direct); err != nil {
		return err
	}
	missing := false
	for i := 0; i < k; i++ {
		missing = missing || (want[i] && sh[i] == nil)
	}
	if !missing {
		return nil
	}
	for {
		known := 0
		for _, s := range sh {
			if s != nil {
				known++
			}
		}
		if known >= k {
			break
		}
		var more []int
		for n := 0; n < k+m && len(more) < k-known; n++ {
			i := (k + n) % (k + m) // parity first, then data
			if sh[i] == nil && !bad[i] {
				more = append(more, i)
			}
		}
		if len(more) < k-known {
			return fmt.Errorf("rs:%d+%d %s: only %d of %d components readable, %d needed: %w", k, m, sp, known+len(more), k+m, k, syscall.EIO)
		}
		if err := readSome(more); err != nil {
			return err
		}
	}
	rebuild := make([]bool, k)
	for i := 0; i < k; i++ {
		if want[i] && sh[i] == nil {
			rebuild[i] = true
			sh[i] = bufs[i][:0:w]
		}
	}
	return o.v.codec.Reconstruct(sh, rebuild)
}
