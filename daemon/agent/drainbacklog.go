package agent

import (
	"context"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Drain backlog reports. While a drainer runs, it tells the global MDS's
// bandwidth ledger (docs/qos.md) how much it still has to drain: the
// bytes and files that match a drain rule and whose current version is
// not drained, whether settled and queued, being copied, or still being
// written, and the bytes it has drained. The ledger turns these into the
// tier's drain rate and predicted completion, and the Slurm controller
// (daemon/bwhold) into holds. A report goes out every drainReportEvery
// when the backlog changed, and every drainReportRefresh anyway (so that
// an MDS that just took office learns it); the final drain's end sends
// one more, Done when nothing is left. Reports are best effort: a
// failure is logged once until one succeeds.

const (
	drainReportEvery   = time.Second
	drainReportRefresh = 10 * time.Second
)

// backlog returns the bytes and files still to drain.
func (d *drainer) backlog() (bytes, files uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.seen {
		bytes += o.size
	}
	return bytes + d.queuedBytes, uint64(len(d.seen) + len(d.inflight))
}

// drainReporter sends a drainer's reports; it is owned by the drainer's
// report goroutine, then by finish.
type drainReporter struct {
	d      *drainer
	last   rpc.QoSDrainReq
	sentAt time.Time
	failed bool
}

// report builds the drainer's current report.
func (r *drainReporter) report(done bool) rpc.QoSDrainReq {
	d := r.d
	b, f := d.backlog()
	d.t.smu.Lock()
	drained := d.t.st.Stats.DrainedBytes
	d.t.smu.Unlock()
	return rpc.QoSDrainReq{Job: d.t.st.Job, Node: d.s.cfg.Node, Backlog: b, Files: f, Drained: drained, Done: done}
}

// send sends req if it differs from the last one sent or force is set.
func (r *drainReporter) send(req rpc.QoSDrainReq, force bool) {
	if !force && req == r.last && time.Since(r.sentAt) < drainReportRefresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	err := r.d.s.global.ReportDrain(ctx, &req)
	switch {
	case err != nil && !r.failed:
		r.d.s.log.Warn("drain_backlog_report_failed", "job_id", req.Job, "err", err)
		r.failed = true
	case err == nil:
		r.failed = false
		r.last, r.sentAt = req, time.Now()
	}
}

// run reports every drainReportEvery until ctx ends.
func (r *drainReporter) run(ctx context.Context) {
	t := time.NewTicker(drainReportEvery)
	defer t.Stop()
	for {
		r.send(r.report(false), false)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// startBacklogReports starts d's report goroutine, owned by the server
// and stopped with d's context.
func (d *drainer) startBacklogReports(ctx context.Context) {
	d.reports = &drainReporter{d: d}
	d.reported = make(chan struct{})
	d.s.wg.Add(1)
	go func() {
		defer d.s.wg.Done()
		defer close(d.reported)
		d.reports.run(ctx)
	}()
}

// reportFinal sends the report of a drainer whose final drain is over
// (its report goroutine has stopped): left bytes in files are not
// drained; with none left, the tier's drains are done.
func (d *drainer) reportFinal(left []undrained) {
	<-d.reported
	req := d.reports.report(len(left) == 0)
	req.Backlog, req.Files = 0, uint64(len(left))
	for _, f := range left {
		req.Backlog += f.size
	}
	d.reports.send(req, true)
}

// reportDrainEnded tells the ledger that job's drains on this node are
// over, whatever was left (recorded lost).
func (s *Server) reportDrainEnded(t *tier) {
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	req := rpc.QoSDrainReq{Job: t.st.Job, Node: s.cfg.Node, Done: true}
	t.smu.Lock()
	req.Drained = t.st.Stats.DrainedBytes
	t.smu.Unlock()
	if err := s.global.ReportDrain(ctx, &req); err != nil {
		s.log.Warn("drain_backlog_report_failed", "job_id", req.Job, "err", err)
	}
}
