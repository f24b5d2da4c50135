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
// the drains of the tiers whose first node this is. A tier whose prolog
// was cut short by the restart is failed (Slurm has failed that prolog
// anyway); the epilog cleans up either way.
func (s *Server) adoptAll(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(s.jobsDir(), "*.json"))
	for _, f := range files {
		if ctx.Err() != nil {
			return
		}
		t, err := s.loadTier(f)
		if err != nil {
			s.log.Error("adopt_failed", "file", f, "err", err)
			continue
		}
		s.tiers[t.st.Job] = t
		t.rep = s.newReporter(t.st.Job)
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
		case phaseAssembling, phaseStaging:
			reason := fmt.Sprintf("the strata agent on %s restarted while it set up the storage tier", s.cfg.Node)
			_ = t.setPhase(phaseFailed, reason)
			t.rep.put(rpc.TierPutReq{Errors: []string{reason}})
		}
		s.log.Info("tier_adopted", "job_id", t.st.Job, "phase", t.st.Phase, "dead", dead)
	}
}
