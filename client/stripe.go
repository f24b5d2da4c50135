package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// This file is the striped layout driver (scheme none): it cuts file I/O
// into per-column chunks and runs them in parallel on the data servers.

// chunk is a contiguous range of one column and the pieces of the caller's
// buffer it maps to, in order.
type chunk struct {
	col    int
	colOff int64
	n      int64
	pieces [][]byte
}

// chunks groups the bytes of p (file offset off) into per-column chunks of
// at most max bytes, ordered round-robin over the columns so every data
// server is kept busy.
func chunks(l layout.Layout, p []byte, off int64, max int64) []chunk {
	percol := make([][]chunk, l.Width)
	for col, exts := range l.Columns(off, int64(len(p))) {
		var cur *chunk
		for _, e := range exts {
			for e.Len > 0 {
				if cur == nil || cur.n == max {
					percol[col] = append(percol[col], chunk{col: col, colOff: e.ColOff})
					cur = &percol[col][len(percol[col])-1]
				}
				take := min(e.Len, max-cur.n)
				b := e.FileOff - off
				cur.pieces = append(cur.pieces, p[b:b+take])
				cur.n += take
				e.ColOff += take
				e.FileOff += take
				e.Len -= take
			}
		}
	}
	var out []chunk
	for i := 0; ; i++ {
		added := false
		for _, cs := range percol {
			if i < len(cs) {
				out = append(out, cs[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// parallel runs fn(0..n-1) with at most limit in flight and returns the
// first error.
func parallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, limit)
	)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}(i)
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (v *view) req(ino uint64, col int) rpc.DSReq {
	return rpc.DSReq{Cap: v.tok, ID: rpc.ComponentID{Ino: ino, Gen: v.lay.Generation, Col: uint32(col)}}
}

func (c *Client) readStriped(ctx context.Context, v *view, ino uint64, p []byte, off int64) error {
	cs := chunks(v.lay, p, off, int64(c.cfg.ChunkSize))
	return parallel(ctx, len(cs), c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		ch := cs[i]
		req := v.req(ino, ch.col)
		req.Off, req.Len = uint64(ch.colOff), uint64(ch.n)
		var r rpc.DSResp
		got, err := c.rpc.CallVec(ctx, v.addrs[ch.col], rpc.DRead, &req, nil, &r, ch.pieces)
		if err != nil {
			return fmt.Errorf("read column %d on %s: %w", ch.col, v.lay.Targets[ch.col], err)
		}
		// A column shorter than the range is a hole or the file's tail: zeros.
		for _, pc := range ch.pieces {
			if got >= len(pc) {
				got -= len(pc)
				continue
			}
			clear(pc[got:])
			got = 0
		}
		return nil
	})
}

// writeStriped writes p at off and returns the columns it wrote.
func (c *Client) writeStriped(ctx context.Context, v *view, ino uint64, p []byte, off int64) ([]int, error) {
	cs := chunks(v.lay, p, off, int64(c.cfg.ChunkSize))
	err := parallel(ctx, len(cs), c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		ch := cs[i]
		req := v.req(ino, ch.col)
		req.Off = uint64(ch.colOff)
		var r rpc.DSResp
		if _, err := c.rpc.CallVec(ctx, v.addrs[ch.col], rpc.DWrite, &req, ch.pieces, &r, nil); err != nil {
			return fmt.Errorf("write column %d on %s: %w", ch.col, v.lay.Targets[ch.col], err)
		}
		return nil
	})
	seen := map[int]bool{}
	var cols []int
	for _, ch := range cs {
		if !seen[ch.col] {
			seen[ch.col] = true
			cols = append(cols, ch.col)
		}
	}
	return cols, err
}

// truncateStriped cuts or extends every column to its share of size.
func (c *Client) truncateStriped(ctx context.Context, v *view, ino uint64, size int64) error {
	return parallel(ctx, v.lay.Width, c.cfg.MaxInflight, func(ctx context.Context, col int) error {
		req := v.req(ino, col)
		req.Size = uint64(v.lay.ColumnSize(size, col))
		if err := c.rpc.Call(ctx, v.addrs[col], rpc.DTruncate, &req, &rpc.DSResp{}); err != nil {
			return fmt.Errorf("truncate column %d on %s: %w", col, v.lay.Targets[col], err)
		}
		return nil
	})
}

// commitStriped makes the given columns durable (fsync on each data server).
func (c *Client) commitStriped(ctx context.Context, v *view, ino uint64, cols map[int]bool) error {
	list := make([]int, 0, len(cols))
	for col := range cols {
		list = append(list, col)
	}
	return parallel(ctx, len(list), c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		col := list[i]
		req := v.req(ino, col)
		if err := c.rpc.Call(ctx, v.addrs[col], rpc.DCommit, &req, &rpc.DSResp{}); err != nil {
			return fmt.Errorf("commit column %d on %s: %w", col, v.lay.Targets[col], err)
		}
		return nil
	})
}
