package agent

import (
	"strconv"
	"strings"
)

// What the agent asks Slurm about a job: whether it still runs (a
// stage-in of a job that does not is stopped) and whether it has ended
// (a tier left by an ended job is torn down: strata agent cleanup, and
// the agent on start).

// slurmJobState returns the job's state as `scontrol show job` prints it
// (RUNNING, COMPLETING, CANCELLED, ...), "" for a job slurmctld no longer
// knows (it ended a while ago), and ok false when Slurm could not be
// asked.
func (s *Server) slurmJobState(job uint32) (state string, ok bool) {
	out, err := s.deps.Scontrol("show", "job", "-o", strconv.FormatUint(uint64(job), 10))
	if err != nil {
		if strings.Contains(out, "Invalid job id") || strings.Contains(err.Error(), "Invalid job id") {
			return "", true
		}
		return "", false
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v, true
		}
	}
	return "", false
}

// jobRuns reports whether a job in state runs or is about to (its tier
// is wanted).
func jobRuns(state string) bool {
	switch state {
	case "PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "RESIZING", "SIGNALING", "STAGE_OUT":
		return true
	}
	return false
}

// jobEnded reports whether a job in state is over and its epilogs have
// run or failed: not running, not completing ("" is a job slurmctld has
// forgotten).
func jobEnded(state string) bool {
	return !jobRuns(state) && state != "COMPLETING" && !strings.HasPrefix(state, "REQUEUE")
}
