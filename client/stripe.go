package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// This file is the striped layout driver (scheme none): it cuts file I/O
// into per-column chunks and runs them in parallel on the data servers. Its
// chunking, parallelism and per-component calls serve the other drivers.

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

func (v *view) req(ino uint64, comp int) rpc.DSReq {
	return rpc.DSReq{Cap: v.tok, ID: rpc.ComponentID{Ino: ino, Gen: v.lay.Generation, Col: uint32(comp)}}
}

// readComp reads len(pieces) bytes at colOff of component comp into
// pieces; where the component is shorter past its share of the file's
// size (the file's tail) the pieces are zero-filled, and a component
// shorter than its share fails with a *shortError (missing.go).
func (o *fileIO) readComp(ctx context.Context, comp int, colOff int64, n int64, pieces [][]byte) error {
	if o.v.stale[comp] {
		return fmt.Errorf("read component %d on %s: %w", comp, o.v.lay.Targets[comp], errStale)
	}
	req := o.v.req(o.ino, comp)
	req.Off, req.Len, req.Direct = uint64(colOff), uint64(n), true
	got, err := o.readCall(ctx, comp, &req, pieces)
	var se *sumError
	if errors.As(err, &se) {
		// The data server sent whole blocks from its file unverified
		// (rpc.DSReq.Direct): corrupt on its disk, or overwritten while
		// they were sent. Read verified by the server, which answers a
		// corrupt block with the EIO it logs, and a rewritten one whole.
		req.Direct = false
		got, err = o.readCall(ctx, comp, &req, pieces)
		if err != nil {
			for _, pc := range pieces {
				clear(pc) // no unverified byte stays in the caller's buffer
			}
		}
	}
	if err != nil {
		return fmt.Errorf("read component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
	}
	if err := o.checkShort(ctx, comp, colOff, n, got); err != nil {
		return fmt.Errorf("read component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
	}
	for _, pc := range pieces {
		if got >= len(pc) {
			got -= len(pc)
			continue
		}
		clear(pc[got:])
		got = 0
	}
	return nil
}

// readCall makes one read call of req into pieces and checks the reply's
// bytes against its checksums as they land (a *sumError if they fail).
func (o *fileIO) readCall(ctx context.Context, comp int, req *rpc.DSReq, pieces [][]byte) (int, error) {
	var r rpc.DSResp
	check := replyCheck{off: req.Off, resp: &r, pieces: pieces}
	got, err := o.c.rpc.CallRead(ctx, o.v.addrs[comp], rpc.DRead, req, &r, pieces, check.landed)
	if err != nil {
		return 0, err
	}
	if err := check.finish(got); err != nil {
		return 0, err
	}
	return got, nil
}

// writeComp writes pieces at colOff of component comp. A stale
// component is skipped; a failure a redundant layout survives is
// recorded for LAYOUTERROR and not returned (layouterror.go).
func (o *fileIO) writeComp(ctx context.Context, comp int, colOff int64, pieces [][]byte) error {
	if o.skip(comp) {
		return nil
	}
	req := o.v.req(o.ino, comp)
	req.Off = uint64(colOff)
	req.Sums = rpc.AppendSums(make([]byte, 0, rpc.SumCount(req.Off, totalLen(pieces))*rpc.SumSize), req.Off, pieces...)
	var r rpc.DSResp
	if _, err := o.c.rpc.CallVec(ctx, o.v.addrs[comp], rpc.DWrite, &req, pieces, &r, nil); err != nil {
		err = fmt.Errorf("write component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
		n := int64(0)
		for _, pc := range pieces {
			n += int64(len(pc))
		}
		if o.absorb(comp, "write", colOff, n, err) {
			return nil
		}
		return err
	}
	return nil
}

// truncateComp sets the size of component comp; stale components and
// survivable failures as writeComp.
func (o *fileIO) truncateComp(ctx context.Context, comp int, size int64) error {
	if o.skip(comp) {
		return nil
	}
	req := o.v.req(o.ino, comp)
	req.Size = uint64(size)
	if err := o.c.rpc.Call(ctx, o.v.addrs[comp], rpc.DTruncate, &req, &rpc.DSResp{}); err != nil {
		err = fmt.Errorf("truncate component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
		if o.absorb(comp, "truncate", size, 0, err) {
			return nil
		}
		return err
	}
	return nil
}

// readChunks is how many chunks (Config.ChunkSize) of a column one
// striped read request asks for at most. A reply is verified block by
// block as it lands (replyCheck), not in a pass over it afterwards, so a
// larger one costs no cache misses, and each request saves the client
// and the data server a round trip's overhead per byte (BenchmarkDataPath
// read: less CPU per byte in every category but the copy into the
// caller's buffer). A write's chunks are not merged: its bytes are summed
// before they are sent and the data server writes them from its cache.
const readChunks = 4

func (o *fileIO) readStriped(ctx context.Context, p []byte, off int64) error {
	cs := chunks(o.v.lay, p, off, int64(readChunks*o.c.cfg.ChunkSize))
	return parallel(ctx, len(cs), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		err := o.readComp(ctx, cs[i].col, cs[i].colOff, cs[i].n, cs[i].pieces)
		if err != nil {
			o.report(cs[i].col, "read", err)
		}
		return err
	})
}

// writeStriped writes p at off and returns the components it wrote.
func (o *fileIO) writeStriped(ctx context.Context, p []byte, off int64) ([]int, error) {
	cs := chunks(o.v.lay, p, off, int64(o.c.cfg.ChunkSize))
	err := parallel(ctx, len(cs), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		err := o.writeComp(ctx, cs[i].col, cs[i].colOff, cs[i].pieces)
		if err != nil {
			o.report(cs[i].col, "write", err)
		}
		return err
	})
	return touched(o.v.lay, off, int64(len(p))), err
}

// touched lists the data columns that the file range [off, off+n) falls in.
func touched(l layout.Layout, off, n int64) []int {
	if n >= l.RowSize() {
		cols := make([]int, l.Width)
		for i := range cols {
			cols[i] = i
		}
		return cols
	}
	var cols []int
	for i, exts := range l.Columns(off, n) {
		if len(exts) > 0 {
			cols = append(cols, i)
		}
	}
	return cols
}

// truncateStriped cuts or extends every column to its share of size.
func (o *fileIO) truncateStriped(ctx context.Context, size int64) error {
	return parallel(ctx, o.v.lay.Width, o.c.cfg.MaxInflight, func(ctx context.Context, col int) error {
		err := o.truncateComp(ctx, col, o.v.lay.ColumnSize(size, col))
		if err != nil {
			o.report(col, "truncate", err)
		}
		return err
	})
}

// commit makes the given components durable (fsync on each data server).
// It serves every scheme.
func (o *fileIO) commit(ctx context.Context, comps map[int]bool, sizes *sizeLog) error {
	list := make([]int, 0, len(comps))
	for comp := range comps {
		list = append(list, comp)
	}
	return parallel(ctx, len(list), o.c.cfg.MaxInflight, func(ctx context.Context, i int) error {
		comp := list[i]
		if o.skip(comp) {
			return nil
		}
		req := o.v.req(o.ino, comp)
		var r rpc.DSResp
		if err := o.c.rpc.Call(ctx, o.v.addrs[comp], rpc.DCommit, &req, &r); err != nil {
			err = fmt.Errorf("commit component %d on %s: %w", comp, o.v.lay.Targets[comp], err)
			if o.absorb(comp, "commit", 0, 0, err) {
				return nil
			}
			o.report(comp, "commit", err)
			return err
		}
		sizes.put(comp, r.Size)
		return nil
	})
}
