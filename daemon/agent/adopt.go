package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// adoptAll takes over the tiers a previous agent of this node left: it
// reads their state files, checks that their daemons still run (same PID,
// same start time, the job's directory in the command line) and resumes
// the drains of the tiers whose first node this is, and the stage-ins. A
// tier whose prolog was cut short by the restart is failed (Slurm has
// failed that prolog anyway); the epilog cleans up either way. A tier of a
// job that Slurm says has ended (its epilog came while no agent ran) is
// torn down, in the background, as its epilog would have. s.mu is held.
func (s *Server) adoptAll(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(s.jobsDir(), "*.json"))
	for _, f := range files {
		if ctx.Err() != nil {
			return
		}
		t, err := s.adopt(f)
		if err != nil {
			s.log.Error("adopt_failed", "file", f, "err", err)
			continue
		}
		if t.st.Phase == phaseAfterJob {
			continue // kept after its job, it drains on (afterjob.go)
		}
		// In the background: a slurmctld that does not answer must not
		// hold up the agent's start.
		job := t.st.Job
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			state, ok := s.slurmJobState(job)
			if !ok || !jobEnded(state) {
				return
			}
			s.log.Info("tier_of_ended_job", "job_id", job, "slurm_state", state)
			if err := s.Cleanup(s.ctx, job, true); err != nil {
				s.log.Error("cleanup_failed", "job_id", job, "err", err)
				return
			}
			s.log.Info("tier_cleaned_up", "job_id", job)
		}()
	}
}

// adopt takes over the tier of one state file.
func (s *Server) adopt(f string) (*tier, error) {
	t, err := s.loadTier(f)
	if err != nil {
		return nil, err
	}
	s.tiers[t.st.Job] = t
	t.rep = s.newReporter(t.st.Job, t.st.Run)
	t.reserved = t.st.Phase != phaseAssembling
	var dead []string
	for name, p := range t.st.Procs {
		if !alive(p, t.marker()) {
			dead = append(dead, name)
		}
	}
	switch t.st.Phase {
	case phaseRunning:
		if len(dead) > 0 {
			msg := fmt.Sprintf("after an agent restart on %s: the tier's %s no longer runs", s.cfg.Node, strings.Join(dead, ", "))
			t.rep.put(rpc.TierPutReq{Errors: []string{msg}})
		}
		if t.st.first() {
			s.startDrainer(t, lookupIdentity(t.st.UID, t.st.GID))
		}
	case phaseAfterJob:
		s.resumeKept(t) // afterjob.go
	case phaseStaging:
		// The prolog is over (it returns before the stage-in): copy this
		// node's share again (what was copied is overwritten).
		s.startStageIn(t, lookupIdentity(t.st.UID, t.st.GID))
	case phaseAssembling:
		reason := fmt.Sprintf("the strata agent on %s restarted while it set up the storage tier", s.cfg.Node)
		_ = t.setPhase(phaseFailed, reason)
		t.rep.put(rpc.TierPutReq{Errors: []string{reason}})
	}
	s.log.Info("tier_adopted", "job_id", t.st.Job, "phase", t.st.Phase, "dead", dead)
	return t, nil
}
