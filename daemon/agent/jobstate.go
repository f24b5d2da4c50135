package agent

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/jobtier"
)

// What Slurm says of a job: which run of it this is (a requeued job runs
// again under the same id: the plugin sends SLURM_JOB_RESTART_COUNT, an
// older plugin does not and then slurmctld is asked) and how a run ended
// (the first node asks slurmctld after its epilog), for the registry. A
// slurmctld that does not answer costs the registry that detail, never a
// job.

// jobEndWait bounds how long the first node watches for a job's end
// state after its epilog: slurmctld knows it once every node's epilog is
// done, and forgets the job MinJobAge (300 s by default) later.
const jobEndWait = 2 * time.Minute

// jobFields returns `scontrol show job -o JOB` as KEY=VALUE fields.
func (s *Server) jobFields(job uint32) (map[string]string, error) {
	out, err := s.deps.Scontrol("show", "job", "-o", strconv.FormatUint(uint64(job), 10))
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

// jobRun returns the job's restart count: the plugin's, else slurmctld's
// (0 for its first run, or when slurmctld cannot say).
func (s *Server) jobRun(req jobtier.HookRequest) uint32 {
	if req.Restarts != nil {
		return *req.Restarts
	}
	f, err := s.jobFields(req.JobID)
	if err != nil {
		s.log.Warn("job_run_unknown", "job_id", req.JobID, "err", err)
		return 0
	}
	n, _ := strconv.ParseUint(f["Restarts"], 10, 32)
	return uint32(n)
}

// jobEndState returns how run of job ended as slurmctld says, or "" while
// it does not say yet: REQUEUED when the job has been requeued since, else
// its final state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...).
func (s *Server) jobEndState(job, run uint32) string {
	f, err := s.jobFields(job)
	if err != nil {
		return ""
	}
	if n, err := strconv.ParseUint(f["Restarts"], 10, 32); err == nil && uint32(n) > run {
		return "REQUEUED"
	}
	switch st := f["JobState"]; st {
	case "", "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT":
		return ""
	default:
		return st
	}
}

// watchJobEnd reports, once slurmctld knows it, how this run of the job
// ended (first node, after its epilog's part).
func (s *Server) watchJobEnd(job, run uint32) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, jobEndWait)
		defer cancel()
		state := ""
		_ = poll(ctx, time.Second, func() (bool, error) {
			state = s.jobEndState(job, run)
			return state != "", nil
		})
		if state == "" {
			return
		}
		rep := s.newReporter(job, run)
		rep.put(rpc.TierPutReq{JobState: state})
		rep.close()
	}()
}
