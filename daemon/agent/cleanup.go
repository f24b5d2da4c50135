package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/strata-hpc/strata/jobtier"
)

// Cleanup tears down the tier of job on this node as its epilog would
// have (final drain on the first node, unmount, stop the daemons, wipe
// the data and the state), for a job Slurm says has ended: its epilog
// never reached this node's agent (the agent was down, or its state was
// lost). force skips asking Slurm. It is what `strata agent cleanup JOB`
// asks, and what the agent does on start for every tier of an ended job.
func (s *Server) Cleanup(ctx context.Context, job uint32, force bool) error {
	if !force {
		state, ok := s.slurmJobState(job)
		switch {
		case !ok:
			return jobErrorf("cannot ask Slurm whether job %d has ended (scontrol show job failed); --force tears its tier down anyway", job)
		case !jobEnded(state):
			return jobErrorf("job %d is %s in Slurm: its epilog tears its tier down (--force to do it now)", job, state)
		}
	}
	req := jobtier.HookRequest{Op: jobtier.OpEpilog, JobID: job, Node: s.cfg.Node}
	if t := s.tier(job); t != nil {
		if phase, _ := t.phase(); phase == phaseAfterJob {
			t.smu.Lock()
			until := t.st.KeepUntil
			t.smu.Unlock()
			return jobErrorf("the storage tier of job %d is kept after the job to drain what its epilog could not; it ends by itself by %s",
				job, until.UTC().Format(time.RFC3339))
		}
		t.smu.Lock()
		req.Nodes, req.Spec, req.UID, req.GID = strings.Join(t.st.Nodes, ","), t.st.Spec, t.st.UID, t.st.GID
		t.smu.Unlock()
	}
	return s.Epilog(ctx, req)
}

// ErrAgentRunning is returned by CleanupOffline when this node's agent
// answers on its socket: ask it instead.
var ErrAgentRunning = errors.New("agent: the node's agent is running")

// CleanupOffline does what Cleanup does without a running agent (one
// that cannot start, or whose socket is gone): it adopts job's tier from
// cfg's state directory in this process, tears it down and returns.
func CleanupOffline(ctx context.Context, cfg Config, deps Deps, job uint32, force bool) error {
	s, err := New(cfg, deps)
	if err != nil {
		return err
	}
	defer s.global.Close()
	if _, err := os.Stat(s.cfg.Socket); err == nil && socketAnswers(s.cfg.Socket) {
		return ErrAgentRunning
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer func() {
		s.cancel()
		s.wg.Wait()
	}()
	s.mu.Lock()
	t := s.newTier(job)
	if _, err := os.Stat(t.file); err == nil {
		if _, err := s.adopt(t.file); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("tier state of job %d: %w", job, err)
		}
	}
	s.mu.Unlock()
	return s.Cleanup(s.ctx, job, force)
}
