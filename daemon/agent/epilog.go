package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/jobtier"
)

// Epilog ends this node's part of the job's tier. On the first node: the
// final drain (every matching file not yet drained, verified), then the
// mark on the tier's root that tells the other nodes it is over. On the
// others: wait for that mark (or for the tier's MDS to be gone). Then on
// every node: unmount (busy: retry, then lazy), stop the daemons, wipe the
// NVMe directory and the job's state, and record the end in the registry.
// It is idempotent: an epilog for a job this agent knows nothing of
// (a second epilog, or one after a prolog that never ran here) only makes
// sure no mount or directory of the job is left.
func (s *Server) Epilog(ctx context.Context, req jobtier.HookRequest) error {
	t := s.tier(req.JobID)
	if t == nil {
		return s.cleanupUnknown(req)
	}
	s.stopStageIn(t, errJobEnded)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.tier(req.JobID) != t {
		return nil // a concurrent epilog did it
	}
	phase, _ := t.phase()
	if phase == phaseAfterJob {
		return nil // a repeated epilog: the tier is kept for its drains
	}
	ectx, cancel := context.WithTimeout(ctx, s.cfg.EpilogTimeout)
	defer cancel()
	first := t.st.first()
	if first {
		s.noteJobOutput(t)
		s.watchJobEnd(t.st.Job, t.st.Run)
		if phase != phaseFailed {
			_ = t.setPhase(phaseDraining, "")
			t.rep.put(rpc.TierPutReq{State: rpc.TierDraining})
		}
		var left []undrained
		if t.drain != nil {
			// The first node's budget ends before the others stop
			// waiting for it (waitFirstNode), so that they see its mark.
			dctx, dcancel := context.WithTimeout(ectx, s.drainBudget())
			var err error
			left, err = t.drain.finish(dctx)
			dcancel()
			t.drain = nil
			if err != nil {
				msg := oneLine(err.Error() + "; the files not drained are lost with the tier")
				t.rep.put(rpc.TierPutReq{Errors: []string{msg}})
				s.appendJobOutput(t, []string{msg})
			}
		}
		if len(left) > 0 {
			return s.keepTier(t, left)
		}
		s.markEpilog(t, epilogDrained)
		s.reportDrainOutcome(t, "")
		s.reportLost(t)
	} else if mark := s.waitFirstNode(ectx, t); mark != epilogDrained && alive(t.proc("ds"), t.marker()) {
		// The first node drains after the job (or has not said it is
		// done): this node's data server keeps its part of the files.
		return s.keepTier(t, nil)
	}
	return s.endTier(t, phase)
}

// endTier tears down this node's part of the tier and records the end.
// The caller holds t.mu.
func (s *Server) endTier(t *tier, phase string) error {
	first := t.st.first()
	err := s.teardown(t)
	t.rep.statsLater(t.stats())
	if first {
		state := rpc.TierDone
		if phase == phaseFailed {
			state = rpc.TierFailed
		}
		t.rep.put(rpc.TierPutReq{State: state, Ended: time.Now().UnixNano()})
	} else if phase == phaseFailed {
		// The first node's tier may be fine: this node's failure is the
		// tier's all the same.
		t.rep.put(rpc.TierPutReq{State: rpc.TierFailed})
	}
	if err != nil {
		t.rep.put(rpc.TierPutReq{Errors: []string{oneLine(fmt.Sprintf("teardown on %s: %v", s.cfg.Node, err))}})
	}
	t.rep.close()
	if err != nil {
		return err // the node keeps something of the tier: drain it
	}
	s.mu.Lock()
	delete(s.tiers, t.st.Job)
	s.mu.Unlock()
	return t.removeState()
}

// drainBudget is the part of the epilog's time the first node's final
// drain may take: the rest is for listing what is left, the mark and the
// teardown.
func (s *Server) drainBudget() time.Duration {
	return s.cfg.EpilogTimeout - min(s.cfg.EpilogTimeout/5, 5*time.Second)
}

// Values of epilogXattr.
const (
	epilogDrained = "drained" // the final drain is over: stop the data servers
	epilogKept    = "kept"    // the first node drains after the job: keep them
)

// markEpilog tells the other nodes that the first node's final drain is
// over (epilogDrained) or goes on after the job (epilogKept).
func (s *Server) markEpilog(t *tier, mark string) {
	if !alive(t.proc("mds"), t.marker()) {
		return // the others find the MDS gone
	}
	tc, err := t.adminClient(time.Second)
	if err != nil {
		return
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tc.SetXattrIno(ctx, rpc.RootIno, epilogXattr, []byte(mark), 0); err != nil {
		s.log.Warn("epilog_mark_failed", "job_id", t.st.Job, "err", err)
	}
}

// waitFirstNode waits until the first node's final drain is over: the
// mark on the tier's root, or the tier's MDS gone, or ctx's end. It
// returns the mark, epilogDrained when the MDS is gone (the first node is
// done with it), "" when ctx ended first.
func (s *Server) waitFirstNode(ctx context.Context, t *tier) string {
	// No failover retries: an MDS that refuses every call for
	// mdsGoneAfter is gone (markReader), and then the first node is done
	// with it.
	tc, err := t.tierClient(time.Nanosecond)
	if err != nil {
		return epilogDrained
	}
	defer tc.Close()
	mark, m := "", markReader{tc: tc}
	_ = poll(ctx, 50*time.Millisecond, func() (bool, error) {
		mark = m.read(ctx)
		return mark != "", nil
	})
	return mark
}

// teardown unmounts the tier, stops its daemons and wipes its data on
// this node. It goes on past failures and returns them all.
func (s *Server) teardown(t *tier) error {
	var errs []error
	m := t.marker()
	stopProc(t.proc("mount"), m, 5*time.Second)
	if err := unmountTier(t.st.MountPath); err != nil {
		errs = append(errs, err)
	}
	stopProc(t.proc("ds"), m, 3*time.Second)
	stopProc(t.proc("mds"), m, 3*time.Second)
	for _, d := range []string{t.data, t.jobDir, s.hintsPath(t.st.Job)} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeMountPoint(t.st.MountPath); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeMountPoint removes the tier's empty mount point directory.
func removeMountPoint(dir string) error {
	if dir == "" || fuseMountAt(dir) != "" {
		return nil
	}
	err := os.Remove(dir)
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EBUSY) {
		return nil
	}
	return fmt.Errorf("remove mount point: %w", err)
}

// cleanupUnknown is the epilog of a job this agent has no tier for: it
// removes whatever of the job is left on the node (a mount, directories).
func (s *Server) cleanupUnknown(req jobtier.HookRequest) error {
	t := s.newTier(req.JobID)
	// Without a spec (strata agent cleanup of a job this agent has no
	// state of), the default mount path.
	var spec jobtier.Spec
	if req.Spec != "" {
		spec, _ = jobtier.Parse(req.Spec)
	}
	dir := s.cfg.Tier.MountPath(spec, req.JobID)
	var errs []error
	if dir != "" {
		if err := unmountTier(dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []string{t.data, t.jobDir, s.hintsPath(req.JobID)} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeMountPoint(dir); err != nil {
		errs = append(errs, err)
	}
	if err := t.removeState(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
