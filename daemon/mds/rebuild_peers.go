package mds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// rebuildClass is the QoS class of the calls of a task with reason:
// rebalance for the moves rebalancing plans, rebuild for the rest.
func rebuildClass(reason string) uint8 {
	if reason == "rebalance" {
		return rpc.ClassRebalance
	}
	return rpc.ClassRebuild
}

// stageCall makes one of the rebuild calls (rpc.DStage*, rpc.DRebuild) to
// data server id about component comp of the file, with an admin
// capability for that component on that server only, of class class.
func (s *Server) stageCall(ctx context.Context, fs fileSnap, id string, comp int, class uint8, method string, req rpc.RebuildReq) (*rpc.RebuildResp, error) {
	req.ID = rpc.ComponentID{Ino: fs.ino, Gen: fs.l.Generation, Col: uint32(comp)}
	req.Cap = s.adminToken(fs.ino, fs.l.Generation, uint32(comp), id, class)
	addr := fs.addrs[id]
	if addr == "" {
		return nil, fmt.Errorf("data server %s is not registered", id)
	}
	var resp rpc.RebuildResp
	cctx, cancel := context.WithTimeout(ctx, rebuildCallTimeout)
	defer cancel()
	if err := s.rb.dsc.Call(cctx, addr, method, &req, &resp); err != nil {
		return nil, fmt.Errorf("%s component %d of inode %d on %s: %w", method, comp, fs.ino, id, err)
	}
	return &resp, nil
}

// windowReq is the rpc.DRebuild request for the n bytes at off of
// component comp, from src: the file's geometry and size, and each
// source with a read capability for it on its data server. Live writes
// into the component itself (block repair) rather than its staged copy.
func (s *Server) windowReq(fs fileSnap, src *sources, class uint8, off, n uint64, live bool) rpc.RebuildReq {
	req := rpc.RebuildReq{
		Off: off, Len: n, Scheme: fs.l.Scheme.String(), Width: uint32(fs.l.Width), Unit: uint64(fs.l.Unit),
		FileSize: fs.size, Decode: len(src.rs) > 0, Live: live,
	}
	cols := src.copies
	if req.Decode {
		cols = src.rs
	}
	for _, c := range cols {
		id := fs.l.Targets[c]
		req.Sources = append(req.Sources, rpc.RebuildSource{
			Col: uint32(c), DS: id, Addr: fs.addrs[id],
			Cap: s.componentToken(capability.OpRead, fs.ino, fs.l.Generation, uint32(c), id, class),
		})
	}
	return req
}

// copyComponent has the target to assemble component t.key.Comp, of size
// bytes, in its staged copy from src, from offset resume on (bytes before
// it are in the staged copy already: an earlier attempt's, complete and
// durable). Every rebuildCheckpointEvery it makes the copied prefix
// durable on to and records it (rebuildProgressCmd), so that an attempt
// cut short by a change of leader or a restart of the target is resumed,
// not redone; not once the file was granted for writing during watch wt.
// A staged copy that is gone when resumed (the target lost it, or
// published it for an attempt whose swap did not follow) is started again.
func (s *Server) copyComponent(ctx context.Context, t *task, term uint64, wt *watch, fs fileSnap, src *sources, to string, size, resume uint64) error {
	comp := int(t.key.Comp)
	class := rebuildClass(t.reason)
	if _, err := s.stageCall(ctx, fs, to, comp, class, rpc.DStageBegin, rpc.RebuildReq{Off: resume}); err != nil {
		if resume == 0 || !errors.Is(err, syscall.ENOENT) {
			return err
		}
		s.log.Info("rebuild_restarted", "inode", fs.ino, "comp", comp, "to", to, "lost_offset", resume, "err", err)
		if !s.leads(term) {
			return errNotLeaderTerm
		}
		if _, err := s.apply(cmdRebuildStart, &rebuildStartCmd{Ino: fs.ino, Gen: t.gen, Comp: t.key.Comp, From: t.from, To: to, Now: s.now(), Term: term}); err != nil {
			return fmt.Errorf("record rebuild intent: %w", err)
		}
		resume = 0
		s.rb.mu.Lock()
		t.copied = 0
		s.rb.mu.Unlock()
		if _, err := s.stageCall(ctx, fs, to, comp, class, rpc.DStageBegin, rpc.RebuildReq{}); err != nil {
			return err
		}
	}
	involved := []string{to}
	for _, c := range append(slices.Clone(src.copies), src.rs...) {
		involved = append(involved, fs.l.Targets[c])
	}
	nwin := int((size + rebuildWindow - 1) / rebuildWindow)
	first := int(resume / rebuildWindow)
	ck := &checkpoint{s: s, t: t, term: term, wt: wt, fs: fs, comp: comp, class: class, to: to, end: size, next: first, recorded: first, last: s.clock()}
	return inParallel(ctx, nwin-first, rebuildInflight, func(ctx context.Context, j int) error {
		i := first + j
		off := uint64(i) * rebuildWindow
		n := min(rebuildWindow, size-off)
		// Windows take their turn at the throttle in order, so that they
		// finish about in order and the recorded prefix keeps up.
		if err := ck.turn(j, func() error {
			if err := s.yield(ctx, involved); err != nil {
				return err
			}
			return s.rb.bucket.Wait(ctx, int64(n))
		}); err != nil {
			return err
		}
		if !s.leads(term) {
			return errNotLeaderTerm // a deposed leader stops
		}
		if _, err := s.stageCall(ctx, fs, to, comp, class, rpc.DRebuild, s.windowReq(fs, src, class, off, n, false)); err != nil {
			return err
		}
		return ck.done(ctx, i, n)
	})
}

// moveComponent is the point where a rebuilt component moves: the target
// publishes its staged copy of size bytes (it becomes the component there)
// and the layout is swapped to name it in raft (same generation, the
// stale mark cleared, the displaced copy a stray). It runs inside the
// write gate (writers.swap): no write grant of the file until it returns.
// Every rebuild, drain and rebalancing move ends here, once; whatever must
// happen before clients' layouts stop naming the old place (a recall of
// layouts handed out) belongs at its start.
func (s *Server) moveComponent(ctx context.Context, t *task, term uint64, fs fileSnap, to string, size uint64) error {
	if !s.leads(term) {
		return errNotLeaderTerm
	}
	if _, err := s.stageCall(ctx, fs, to, int(t.key.Comp), rebuildClass(t.reason), rpc.DStagePublish, rpc.RebuildReq{Size: size}); err != nil {
		return err
	}
	_, err := s.apply(cmdRebuildDone, &rebuildDoneCmd{Ino: fs.ino, Gen: t.gen, Comp: t.key.Comp, From: t.from, To: to, Now: s.now()})
	return err
}

// yield waits while a data server in ids reports more foreground calls in
// flight than RebuildYieldLoad, for at most ten heartbeat intervals: the
// rebuild slows down under load but is never starved.
func (s *Server) yield(ctx context.Context, ids []string) error {
	for i := 0; i < 10; i++ {
		views := s.reg.views()
		high := false
		for _, id := range ids {
			high = high || views[id].load > s.cfg.RebuildYieldLoad
		}
		if !high {
			return nil
		}
		s.rmet.rebuildYields.Add(1)
		t := time.NewTimer(s.cfg.HeartbeatInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
