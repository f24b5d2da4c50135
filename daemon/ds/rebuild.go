package ds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/layout"
)

// Rebuild from peers (rpc.DRebuild and the DStage* calls): the MDS leader
// names a component this server is to hold, its geometry and the
// components it is made from, and this server reads those from their data
// servers with the read capabilities the MDS signed for them, verifies
// every block's CRC32C on the way in, copies (mirror, or a move of the
// component itself) or decodes it (rs, from K of the K+M components,
// through layout.Codec), and writes it into its staged copy (stage.go),
// window by window as the MDS asks. The MDS paces the windows, records
// checkpoints (DStageCommit) and finally has the copy published
// (DStagePublish) before it swaps the component into the layout in raft.
// No file byte passes through the MDS.

// peerCallTimeout bounds one read from a source; windowTimeout a whole
// window's reading, under the MDS's 30s wait for the call: a window the
// MDS gave up on writes nothing late into a copy it has started again.
const (
	peerCallTimeout = 20 * time.Second
	windowTimeout   = 25 * time.Second
)

// registerRebuild installs the rebuild calls on mux.
func (s *Server) registerRebuild(mux *rpc.Mux) {
	rpc.Handle(mux, rpc.DStageBegin, s.handleStageBegin)
	rpc.Handle(mux, rpc.DRebuild, s.handleRebuild)
	rpc.Handle(mux, rpc.DStageCommit, s.handleStageCommit)
	rpc.Handle(mux, rpc.DStagePublish, s.handleStagePublish)
}

// checkRebuild verifies that req's capability is the MDS's admin
// capability for req.ID on this server only (issue 9: one component, one
// target), of a background class.
func (s *Server) checkRebuild(ctx context.Context, req *rpc.RebuildReq) error {
	call := capability.Call{Ino: req.ID.Ino, Gen: req.ID.Gen, Col: req.ID.Col, Op: capability.OpAdmin, Server: s.cfg.ID}
	if id, ok := identity.FromContext(ctx); ok {
		call.Client = id.Principal
	}
	if err := req.Cap.Check(s.secret, s.clock(), call); err != nil {
		return rpc.Errorf(syscall.EACCES, "ds: rebuild: "+err.Error())
	}
	if req.Cap.Target == "" || req.Cap.Comp == 0 {
		return rpc.Errorf(syscall.EACCES, "ds: rebuild: the capability must name one component on one data server")
	}
	if req.Cap.Class != rpc.ClassRebuild && req.Cap.Class != rpc.ClassRebalance {
		return rpc.Errorf(syscall.EACCES, fmt.Sprintf("ds: rebuild: capability of class %d, want rebuild or rebalance", req.Cap.Class))
	}
	return nil
}

func (s *Server) handleStageBegin(ctx context.Context, req *rpc.RebuildReq) (*rpc.RebuildResp, error) {
	if err := s.checkRebuild(ctx, req); err != nil {
		return nil, err
	}
	size, err := s.store.stageBegin(req.ID, req.Off)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.RebuildResp{Size: size}, nil
}

func (s *Server) handleStageCommit(ctx context.Context, req *rpc.RebuildReq) (*rpc.RebuildResp, error) {
	if err := s.checkRebuild(ctx, req); err != nil {
		return nil, err
	}
	size, err := s.store.stageCommit(req.ID)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.RebuildResp{Size: size}, nil
}

func (s *Server) handleStagePublish(ctx context.Context, req *rpc.RebuildReq) (*rpc.RebuildResp, error) {
	if err := s.checkRebuild(ctx, req); err != nil {
		return nil, err
	}
	size, err := s.store.publish(req.ID, req.Size)
	if err != nil {
		return nil, wireError(err)
	}
	s.log.Info("component_published", "inode", req.ID.Ino, "gen", req.ID.Gen, "col", req.ID.Col, "size", size)
	return &rpc.RebuildResp{Size: size}, nil
}

// handleRebuild fills one window of the staged copy (or, with Live, of
// the component) from the sources.
func (s *Server) handleRebuild(ctx context.Context, req *rpc.RebuildReq) (*rpc.RebuildResp, error) {
	if err := s.checkRebuild(ctx, req); err != nil {
		return nil, err
	}
	if req.Len == 0 || req.Len > rpc.MaxData || req.Off > maxOffset {
		return nil, wireError(fmt.Errorf("%w: rebuild window of %d bytes at %d (at most %d)", ErrRange, req.Len, req.Off, rpc.MaxData))
	}
	scheme, err := layout.ParseScheme(req.Scheme)
	if err != nil {
		return nil, rpc.Errorf(syscall.EINVAL, "ds: rebuild: "+err.Error())
	}
	w := &window{s: s, req: req, l: layout.Layout{Width: int(req.Width), Unit: int64(req.Unit), Scheme: scheme}}
	rctx, cancel := context.WithTimeout(ctx, windowTimeout)
	defer cancel()
	buf := getWindowBuf(int(req.Len))
	defer putWindowBuf(buf)
	p := *buf
	var wire []byte
	if req.Decode {
		err = w.decode(rctx, p)
	} else {
		wire, p, err = w.copy(rctx, p)
	}
	if err == nil {
		err = rctx.Err()
	}
	if err != nil {
		return nil, wireError(err)
	}
	if !req.Live && allZero(p) {
		return &rpc.RebuildResp{}, nil // a hole in the fresh staged copy
	}
	if wire == nil {
		// Decoded (or zero-filled) bytes are summed here once; the store
		// derives their stored CRCs from these sums (writeEntry, verified).
		wire = rpc.AppendSums(nil, req.Off, p)
	}
	// The QoS scheduler admits the write here only: the reads were
	// admitted by the sources' own, and a window waiting for its sources
	// holds no slot of this server (two servers rebuilding from each
	// other must not wait for each other's slots).
	release, err := s.admit(rctx, &req.Cap, int64(len(p)))
	if err != nil {
		return nil, err
	}
	defer release()
	if !req.Live {
		if err := s.store.stageWrite(req.ID, req.Off, p, wire); err != nil {
			return nil, wireError(err)
		}
		return &rpc.RebuildResp{Written: uint64(len(p))}, nil
	}
	size, err := s.store.writeSums(req.ID, req.Off, p, wire, true)
	if err != nil {
		return nil, wireError(err)
	}
	// Read the repaired bytes back through their stored checksums.
	var back rpc.Data
	var sums []byte
	if _, _, err := s.store.read(req.ID, req.Off, uint64(len(p)), &back, &sums); err != nil {
		return nil, wireError(fmt.Errorf("read back: %w", err))
	}
	return &rpc.RebuildResp{Written: uint64(len(p)), Size: size}, nil
}

// window is one DRebuild call's work.
type window struct {
	s   *Server
	req *rpc.RebuildReq
	l   layout.Layout
}

// read fills p with the bytes of source src at the window's offset and
// returns their wire checksums and how many the source held; bytes past
// its end are zeros. A source that ends before its share of the file's
// size lost bytes: an EIO, so that another source is taken rather than
// zeros.
//
// The read is direct (rpc.DSReq.Direct): the source sends whole blocks
// from its file unverified and they are verified here. Bytes that fail
// are read once more verified by the source, which answers a corrupt
// block with the EIO it logs (and a block rewritten meanwhile whole), as
// the client library's reads do.
func (w *window) read(ctx context.Context, src rpc.RebuildSource, p []byte) ([]byte, int, error) {
	off := w.req.Off
	dreq := rpc.DSReq{Cap: src.Cap, ID: rpc.ComponentID{Ino: w.req.ID.Ino, Gen: w.req.ID.Gen, Col: src.Col}, Off: off, Len: uint64(len(p))}
	var resp rpc.DSResp
	cctx, cancel := context.WithTimeout(ctx, peerCallTimeout)
	defer cancel()
	call := func(direct bool) (int, error) {
		dreq.Direct, resp = direct, rpc.DSResp{}
		n, err := w.s.peers.CallData(cctx, src.Addr, rpc.DRead, &dreq, nil, &resp, p)
		if err == nil {
			if err = rpc.CheckSums(off, resp.Sums, p[:n]); err != nil {
				err = fmt.Errorf("%w (%w)", err, syscall.EIO)
			}
		}
		return n, err
	}
	n, err := call(true)
	if errors.Is(err, rpc.ErrSum) {
		n, err = call(false)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read component %d of inode %d on %s: %w", src.Col, dreq.ID.Ino, src.DS, err)
	}
	if need := min(off+uint64(len(p)), uint64(w.l.ComponentSize(int64(w.req.FileSize), int(src.Col)))); off+uint64(n) < need {
		return nil, 0, fmt.Errorf("component %d of inode %d on %s ends at %d, before its share %d of the file's size: %w",
			src.Col, dreq.ID.Ino, src.DS, off+uint64(n), need, syscall.EIO)
	}
	clear(p[n:])
	return resp.Sums, n, nil
}

// copy fills p from the first source that serves the window. It returns
// the bytes to write (the copy's, without the zeros past its end, unless
// Live) and their wire checksums, as verified on the way in (nil for a
// Live window the source ends in: the caller sums it).
func (w *window) copy(ctx context.Context, p []byte) ([]byte, []byte, error) {
	err := errors.New("no source")
	for _, src := range w.req.Sources {
		var sums []byte
		var n int
		sums, n, err = w.read(ctx, src, p)
		switch {
		case err == nil && w.req.Live && n < len(p):
			return nil, p, nil // the zeros past the source's end are summed by the caller
		case err == nil && w.req.Live:
			return sums, p, nil
		case err == nil:
			return sums, p[:n], nil
		case !survivable(err):
			return nil, nil, err
		}
	}
	return nil, nil, err
}

// decode fills p with the window of the rs component req.ID.Col, rebuilt
// from K of the sources: K at once, then more for those that fail.
func (w *window) decode(ctx context.Context, p []byte) error {
	codec, err := w.l.Codec()
	if err != nil {
		return err
	}
	k, m, col := codec.K(), codec.M(), int(w.req.ID.Col)
	if col >= k+m {
		return fmt.Errorf("%w: component %d of %s", ErrRange, col, w.l.Scheme)
	}
	seen := make([]bool, k+m)
	for _, src := range w.req.Sources {
		if int(src.Col) >= k+m || int(src.Col) == col || seen[src.Col] {
			return fmt.Errorf("%w: source component %d for component %d of %s", ErrRange, src.Col, col, w.l.Scheme)
		}
		seen[src.Col] = true
	}
	shards := make([][]byte, k+m)
	var bufs []*[]byte // every buffer a source was read into, returned at the end
	defer func() {
		for _, b := range bufs {
			putWindowBuf(b)
		}
	}()
	cands := w.req.Sources
	have, next := 0, 0
	var mu sync.Mutex
	var lastErr error
	for have < k {
		batch := cands[next:min(len(cands), next+k-have)]
		next += len(batch)
		if len(batch) < k-have {
			return fmt.Errorf("rebuild component %d of inode %d: only %d of %d components readable at %d: %w", col, w.req.ID.Ino, have+len(batch), k, w.req.Off, errors.Join(lastErr, syscall.EIO))
		}
		var wg sync.WaitGroup
		var fatal error
		for _, src := range batch {
			buf := getWindowBuf(len(p))
			bufs = append(bufs, buf)
			wg.Go(func() {
				b := *buf
				_, _, err := w.read(ctx, src, b)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					shards[src.Col] = b
					have++
				case survivable(err):
					lastErr = err
				case fatal == nil:
					fatal = err
				}
			})
		}
		wg.Wait()
		if fatal != nil {
			return fatal
		}
	}
	return codec.Rebuild(shards, col, p)
}

// windowBufs holds the buffers of windows that are done, for the next
// ones (a window is a few MiB and a decode takes K+1 of them: allocating
// each afresh has the garbage collector's assists stall the copies).
var windowBufs sync.Pool // of *[]byte

// getWindowBuf returns a buffer of n bytes, reused if one is free. Its
// bytes are whatever its last user left: the caller overwrites them all.
func getWindowBuf(n int) *[]byte {
	if b, ok := windowBufs.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// putWindowBuf gives back a buffer of getWindowBuf once nothing uses it.
func putWindowBuf(b *[]byte) { windowBufs.Put(b) }

// survivable reports whether a source's failure leaves others to try.
func survivable(err error) bool {
	return errors.Is(err, rpc.ErrUnavailable) || errors.Is(err, syscall.EIO) || errors.Is(err, context.DeadlineExceeded)
}

// zeros is compared against to find all-zero windows.
var zeros = make([]byte, 64<<10)

func allZero(p []byte) bool {
	for len(p) > 0 {
		n := min(len(p), len(zeros))
		if !bytes.Equal(p[:n], zeros[:n]) {
			return false
		}
		p = p[n:]
	}
	return true
}
