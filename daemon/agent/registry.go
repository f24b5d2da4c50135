package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// reportTimeout bounds one call to the registry: a global MDS that does
// not answer must not hold up a job.
const reportTimeout = 3 * time.Second

// statsEvery is how often a tier's changed counters go to the registry.
const statsEvery = time.Second

// reporter sends one tier's reports to the global MDS's tier registry, in
// order, from a goroutine the server owns, so that a global MDS that does
// not answer never holds up a prolog or a drain. Reports are best effort:
// a failure is logged, the tier goes on. Counters are sent at most every
// statsEvery; close sends what is queued before it returns.
type reporter struct {
	c      *client.Client
	secret []byte
	job    uint32
	runNo  uint32 // the job's restart count when the run began
	log    *slog.Logger

	mu    sync.Mutex
	queue []rpc.TierPutReq
	stats *rpc.TierNodeStats // to send, nil when sent
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// newReporter starts a reporter of one run of job; close stops it.
func (s *Server) newReporter(job, run uint32) *reporter {
	r := &reporter{
		c: s.global, secret: s.cfg.Secret, job: job, runNo: run, log: s.log.With("job_id", job),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r.run(s.ctx)
	}()
	return r
}

// put queues one report.
func (r *reporter) put(req rpc.TierPutReq) {
	r.mu.Lock()
	r.queue = append(r.queue, req)
	r.mu.Unlock()
	r.poke()
}

func (r *reporter) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// send sends one report now.
func (r *reporter) send(req rpc.TierPutReq) {
	req.Job, req.Run = r.job, r.runNo
	req.Cap = capability.Token{Ops: capability.OpAdmin, Job: "tier-agent", Expiry: time.Now().Add(time.Minute).UnixNano()}
	req.Cap.Sign(r.secret)
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	if err := r.c.PutTier(ctx, &req); err != nil {
		r.log.Warn("tier_report_failed", "err", err)
	}
}

// statsLater queues this node's counters for the next periodic report.
func (r *reporter) statsLater(st rpc.TierNodeStats) {
	r.mu.Lock()
	r.stats = &st
	r.mu.Unlock()
	r.poke()
}

// flush sends the queued reports, the queued counters with the last of
// them (a final state and the counters it ends with land together: the
// registry never shows a tier done with its last counters still to come).
func (r *reporter) flush() {
	r.mu.Lock()
	q, st := r.queue, r.stats
	r.queue, r.stats = nil, nil
	r.mu.Unlock()
	if st != nil {
		if n := len(q); n > 0 && q[n-1].Stats.Node == "" {
			q[n-1].Stats = *st
		} else {
			q = append(q, rpc.TierPutReq{Stats: *st})
		}
	}
	for _, req := range q {
		r.send(req)
	}
}

func (r *reporter) run(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.stop:
			return
		case <-r.kick:
		}
		r.flush()
		t := time.NewTimer(statsEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// close stops the reporter and sends what is queued.
func (r *reporter) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	r.flush()
}
