package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// A stage-in runs after the prolog, not in it: a prolog that outlasts the
// plugin's timeout fails and Slurm drains the node, and a stage-in takes
// as long as its data needs. The prolog assembles the tier (bounded by
// ReadyTimeout), starts this node's share of the stage-in in the
// background and returns; the job's steps wait for the tier in the SPANK
// plugin (status with Wait, reply Pending) until every node's share is
// done, so that Slurm runs the job's tasks only on a filled tier, and
// counts the time as the job's. Each node marks its share done on the
// tier's root (stagedXattrPrefix + node); a node whose share fails marks
// the tier failed (failedXattr), and every node stops. While it runs, the
// first node's agent asks Slurm every jobWatchInterval whether the job
// still runs (one scontrol per job, whatever its size); a job cancelled
// (scancel), timed out or requeued has its tier marked failed, and every
// node, which watches that mark, stops its share at once; the epilog
// cleans up.

// stagedXattrPrefix + node is set on a tier's root when that node's share
// of the stage-in is copied and verified.
const stagedXattrPrefix = "user.strata.staged."

// failedXattr is set on a tier's root by a node whose part of the tier
// failed (its stage-in share, its capacity): "NODE: REASON". Every node
// stops waiting and fails the tier with that reason.
const failedXattr = "user.strata.failed"

// jobWatchInterval is how often the first node asks Slurm whether a job
// whose stage-in runs still runs, and how often every node looks for the
// failure mark.
const jobWatchInterval = 2 * time.Second

// stageRun is a stage-in running in the background.
type stageRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errJobEnded is the cause of a stage-in stopped because its job ended.
var errJobEnded = errors.New("the job ended")

// startStageIn starts this node's share of t's stage-in in the
// background; t.mu is held. When every node's share is done the tier
// runs (first node: its drains start).
func (s *Server) startStageIn(t *tier, id identity) {
	ctx, cancel := context.WithCancelCause(s.ctx)
	run := &stageRun{cancel: cancel, done: make(chan struct{})}
	t.stage = run
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.watchJob(ctx, t, cancel)
	}()
	go func() {
		defer s.wg.Done()
		defer close(run.done)
		defer cancel(nil)
		err := s.runStageIn(ctx, t, id)
		t.mu.Lock()
		defer t.mu.Unlock()
		if err == nil && ctx.Err() == nil {
			if err = s.tierRuns(t, id); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			err = stageStopped(t, ctx)
		}
		s.stageFailed(t, err)
	}()
}

// stageStopped is why a stage-in whose context ended stopped.
func stageStopped(t *tier, ctx context.Context) error {
	return stageStoppedBy(t, context.Cause(ctx))
}

// stageStoppedBy is the job error of a stage-in stopped for cause: the
// failure mark's own message, or what stopped it.
func stageStoppedBy(t *tier, cause error) error {
	if isJobError(cause) {
		return cause
	}
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return jobErrorf("the stage-in of job %d stopped: %v", t.st.Job, cause)
	}
	return jobErrorf("the stage-in of job %d stopped: the strata agent on this node is shutting down", t.st.Job)
}

// stopStageIn stops t's stage-in, if one runs, and waits until it has
// stopped. The caller does not hold t.mu.
func (s *Server) stopStageIn(t *tier, cause error) {
	t.mu.Lock()
	run := t.stage
	t.mu.Unlock()
	if run == nil {
		return
	}
	run.cancel(cause)
	<-run.done
}

// runStageIn copies this node's share, marks it done on the tier's root,
// and waits until every node's share is done or one failed.
func (s *Server) runStageIn(ctx context.Context, t *tier, id identity) error {
	tc, err := t.tierClient(2 * time.Second)
	if err != nil {
		return err
	}
	defer tc.Close()
	if err := s.stageIn(ctx, t, tc, id); err != nil {
		if isJobError(err) {
			s.markFailed(t, err.Error())
		}
		return err
	}
	if err := setRootXattr(ctx, tc, stagedXattrPrefix+t.st.Nodes[t.st.Index], "done"); err != nil {
		return fmt.Errorf("stage-in: mark this node's share done: %w", err)
	}
	return s.waitStaged(ctx, t, tc)
}

// waitStaged waits until every node has marked its share done, or one
// marked the tier failed.
func (s *Server) waitStaged(ctx context.Context, t *tier, tc *client.Client) error {
	return poll(ctx, 100*time.Millisecond, func() (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		names, err := tc.ListXattrIno(cctx, rpc.RootIno)
		if err != nil {
			return false, nil // the tier MDS is busy or restarting; ctx bounds this
		}
		have := map[string]bool{}
		for _, n := range names {
			have[n] = true
		}
		if have[failedXattr] {
			return false, tierFailedElsewhere(ctx, tc)
		}
		for _, n := range t.st.Nodes {
			if !have[stagedXattrPrefix+n] {
				return false, nil
			}
		}
		return true, nil
	})
}

// tierFailedElsewhere is the job error of a tier another node marked
// failed.
func tierFailedElsewhere(ctx context.Context, tc *client.Client) error {
	v, err := tc.GetXattrIno(ctx, rpc.RootIno, failedXattr)
	if err != nil {
		return jobErrorf("the storage tier failed on another node")
	}
	return &jobError{msg: string(v)}
}

// markFailed tells the other nodes that this node's part of the tier
// failed, with the reason the job will show. Best effort.
func (s *Server) markFailed(t *tier, reason string) {
	tc, err := t.adminClient(time.Second)
	if err != nil {
		return
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	if !strings.Contains(reason, t.st.Nodes[t.st.Index]) {
		reason = fmt.Sprintf("on node %s: %s", t.st.Nodes[t.st.Index], reason)
	}
	// XattrCreate: the first failure is the one every node reports.
	if err := tc.SetXattrIno(ctx, rpc.RootIno, failedXattr, []byte(oneLine(reason)), rpc.XattrCreate); err != nil && !errors.Is(err, syscall.EEXIST) {
		s.log.Warn("tier_fail_mark_failed", "job_id", t.st.Job, "err", err)
	}
}

// setRootXattr sets one xattr on the tier's root.
func setRootXattr(ctx context.Context, tc *client.Client, name, value string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return tc.SetXattrIno(cctx, rpc.RootIno, name, []byte(value), 0)
}

// tierRuns makes t usable: phase running, the registry told, the first
// node's drains started. t.mu is held.
func (s *Server) tierRuns(t *tier, id identity) error {
	t.stage = nil
	if err := t.setPhase(phaseRunning, ""); err != nil {
		return err
	}
	t.rep.statsLater(t.stats())
	if t.st.first() {
		t.rep.put(rpc.TierPutReq{State: rpc.TierRunning})
		s.startDrainer(t, id)
	}
	return nil
}

// stageFailed fails t after its prolog: whatever went wrong, it is the
// job's failure now (the prolog has succeeded; the node stays in
// service). t.mu is held.
func (s *Server) stageFailed(t *tier, err error) {
	t.stage = nil
	reason := err.Error()
	if !isJobError(err) {
		reason = fmt.Sprintf("the storage tier's stage-in failed on node %s: %v", s.cfg.Node, err)
	}
	_ = t.setPhase(phaseFailed, oneLine(reason))
	req := rpc.TierPutReq{Errors: []string{oneLine(reason)}}
	if t.st.first() {
		req.State = rpc.TierFailed
	}
	t.rep.put(req)
	s.log.Warn("stage_in_failed", "job_id", t.st.Job, "err", err)
}

// watchJob stops this node's stage-in when the tier is marked failed
// (another node's share failed, or its job ended) and, on the first node,
// marks it so when Slurm says the job no longer runs.
func (s *Server) watchJob(ctx context.Context, t *tier, cancel context.CancelCauseFunc) {
	tc, err := t.adminClient(time.Second)
	if err != nil {
		return
	}
	defer tc.Close()
	tick := time.NewTicker(jobWatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if t.st.first() {
			if st, ok := s.slurmJobState(t.st.Job); ok && !jobRuns(st) {
				err := fmt.Errorf("%w in Slurm (%s)", errJobEnded, st)
				s.markFailed(t, stageStoppedBy(t, err).Error())
				cancel(err)
				return
			}
		}
		if err := failedMark(ctx, tc); err != nil {
			cancel(err)
			return
		}
	}
}
