package mds

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

// The bandwidth ledger (docs/qos.md): what the MDS knows of the global
// namespace's bandwidth, kept in memory where the reports land (the
// leader: the data servers heartbeat to it and the agents' client calls
// it), rebuilt within a few seconds after a failover from the next
// heartbeats and drain reports. Per data server, its measured capacity
// and its disk, network and queue (rpc.DSMeasure); per class and job,
// the bytes per second asked of the schedulers (demand) and let through
// (use); per job tier, the bytes its agents still have to drain, the rate
// they drain at and when they should be done.

const (
	// drainForget is how long a drain whose nodes all said done stays in
	// the ledger (an admin sees it reach 0), and drainStale how long one
	// whose agent stopped reporting does.
	drainForget = time.Minute
	drainStale  = 5 * time.Minute
	// minShownRate hides classes and jobs that have gone quiet.
	minShownRate = 1.0
)

// ledger is the bandwidth ledger; its methods are safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	ds     map[string]*ledgerDS
	drains map[uint32]*ledgerDrain
}

func newLedger() *ledger {
	return &ledger{ds: map[string]*ledgerDS{}, drains: map[uint32]*ledgerDrain{}}
}

// useKey is one job in one class.
type useKey struct {
	class uint8
	job   string
}

// ledgerDS is one data server: its last measure and the rates of its
// scheduler's counters.
type ledgerDS struct {
	measure   rpc.DSMeasure
	served    map[useKey]*qos.Rate
	requested map[useKey]*qos.Rate
	at        time.Time // of the last heartbeat
}

// ledgerDrain is one job tier's drain, per reporting node.
type ledgerDrain struct {
	nodes   map[string]*drainNode
	updated time.Time
}

type drainNode struct {
	backlog, files, drained uint64
	done                    bool
	rate                    qos.Rate
}

// beat adds a data server's heartbeat at now.
func (l *ledger) beat(now time.Time, h *rpc.HeartbeatReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.ds[h.ID]
	if d == nil {
		d = &ledgerDS{served: map[useKey]*qos.Rate{}, requested: map[useKey]*qos.Rate{}}
		l.ds[h.ID] = d
	}
	if h.Measure != nil {
		d.measure = *h.Measure
	}
	observe(d.served, d.at, now, h.QoSServed)
	observe(d.requested, d.at, now, h.QoSRequested)
	d.at = now
}

// observe adds counters to rates; a job the server no longer reports
// (it forgot an idle one) is dropped. A job that appears after the
// server's first heartbeat (at prev) had nothing then.
func observe(rates map[useKey]*qos.Rate, prev, now time.Time, counters []rpc.QoSServed) {
	seen := make(map[useKey]bool, len(counters))
	for _, c := range counters {
		k := useKey{c.Class, c.Job}
		seen[k] = true
		r := rates[k]
		if r == nil {
			r = &qos.Rate{}
			rates[k] = r
			if !prev.IsZero() {
				r.Observe(prev, 0)
			}
		}
		r.Observe(now, int64(min(c.Bytes, 1<<62)))
	}
	for k := range rates {
		if !seen[k] {
			delete(rates, k)
		}
	}
}

// drain adds an agent's drain report at now.
func (l *ledger) drain(now time.Time, r *rpc.QoSDrainReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.drains[r.Job]
	if d == nil {
		d = &ledgerDrain{nodes: map[string]*drainNode{}}
		l.drains[r.Job] = d
	}
	n := d.nodes[r.Node]
	if n == nil {
		n = &drainNode{}
		d.nodes[r.Node] = n
	}
	n.backlog, n.files, n.drained, n.done = r.Backlog, r.Files, r.Drained, r.Done
	n.rate.Observe(now, int64(min(r.Drained, 1<<62)))
	d.updated = now
}

// status fills the ledger's part of a QoS status: the data servers in up
// (others are left out and add no capacity), demand and use summed over
// them, and every drain, by job.
func (l *ledger) status(now time.Time, up map[string]bool, resp *rpc.QoSStatusResp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	demand, use := map[useKey]float64{}, map[useKey]float64{}
	for _, id := range slices.Sorted(maps.Keys(l.ds)) {
		if !up[id] {
			continue
		}
		d := l.ds[id]
		resp.Measures = append(resp.Measures, rpc.QoSLedgerDS{ID: id, Measure: d.measure})
		resp.Capacity += d.measure.Capacity
		for k, r := range d.requested {
			demand[k] += r.PerSecond()
		}
		for k, r := range d.served {
			use[k] += r.PerSecond()
		}
	}
	for k := range demand {
		if demand[k] < minShownRate && use[k] < minShownRate {
			continue
		}
		resp.Use = append(resp.Use, rpc.QoSUse{Class: k.class, Job: k.job, Demand: uint64(demand[k]), Use: uint64(use[k])})
	}
	slices.SortFunc(resp.Use, func(a, b rpc.QoSUse) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Job, b.Job))
	})
	for _, job := range slices.Sorted(maps.Keys(l.drains)) {
		d := l.drains[job]
		e := rpc.QoSDrain{Job: job, Done: true, Updated: d.updated.UnixNano()}
		var rate float64
		for _, n := range d.nodes {
			e.Backlog += n.backlog
			e.Files += n.files
			e.Drained += n.drained
			e.Done = e.Done && n.done
			rate += max(n.rate.PerSecond(), 0)
		}
		age := now.Sub(d.updated)
		if e.Done && age > drainForget || age > drainStale {
			delete(l.drains, job)
			continue
		}
		e.Rate = uint64(rate)
		if eta := qos.DrainETA(now, e.Backlog, rate); !eta.IsZero() {
			e.ETA = eta.UnixNano()
		}
		resp.Drains = append(resp.Drains, e)
	}
}

// qosDrain records an agent's drain report (the caller's access was
// checked: a node agent or an admin).
func (s *Server) qosDrain(_ context.Context, r *rpc.QoSDrainReq) (*rpc.Empty, error) {
	if r.Job == 0 {
		return nil, errf(syscall.EINVAL, "qos drain report: job id 0")
	}
	if err := rpc.CheckName("node", r.Node); err != nil {
		return nil, errf(syscall.EINVAL, "qos drain report of job %d: %v", r.Job, err)
	}
	s.ledger.drain(s.clock(), r)
	return &rpc.Empty{}, nil
}

// DrainBacklog returns the bytes job tiers still have to drain, summed
// over the ledger's drains, and the measured capacity of the data servers
// that are up (what the Slurm controller needs, daemon/bwhold).
func (s *Server) DrainBacklog(ctx context.Context) (backlog, capacity uint64, err error) {
	st, err := s.QoSStatus(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, d := range st.Drains {
		backlog += d.Backlog
	}
	return backlog, st.Capacity, nil
}

// writeLedgerMetrics writes the ledger's series from a status.
func writeLedgerMetrics(w io.Writer, family func(name, typ, help string), st *rpc.QoSStatusResp, now time.Time) {
	family("strata_qos_capacity_bytes_per_second", "gauge", "A data server's bandwidth: its qos_bandwidth, else the most it has delivered.")
	for _, d := range st.Measures {
		fmt.Fprintf(w, "strata_qos_capacity_bytes_per_second{ds=%s} %d\n", label(d.ID), d.Measure.Capacity)
	}
	family("strata_qos_disk_bytes_per_second", "gauge", "What a data server's disk read and wrote over its last heartbeat interval.")
	for _, d := range st.Measures {
		fmt.Fprintf(w, "strata_qos_disk_bytes_per_second{ds=%s,op=\"read\"} %d\n", label(d.ID), d.Measure.DiskRead)
		fmt.Fprintf(w, "strata_qos_disk_bytes_per_second{ds=%s,op=\"write\"} %d\n", label(d.ID), d.Measure.DiskWrite)
	}
	family("strata_qos_net_bytes_per_second", "gauge", "What a data server's network interfaces (not loopback) moved over its last heartbeat interval.")
	for _, d := range st.Measures {
		fmt.Fprintf(w, "strata_qos_net_bytes_per_second{ds=%s,dir=\"rx\"} %d\n", label(d.ID), d.Measure.NetRx)
		fmt.Fprintf(w, "strata_qos_net_bytes_per_second{ds=%s,dir=\"tx\"} %d\n", label(d.ID), d.Measure.NetTx)
	}
	family("strata_qos_queue_wait_seconds", "gauge", "Mean time a read or write waited in a data server's QoS scheduler over its last heartbeat interval.")
	for _, d := range st.Measures {
		fmt.Fprintf(w, "strata_qos_queue_wait_seconds{ds=%s} %g\n", label(d.ID), float64(d.Measure.QueueWaitUs)/1e6)
	}
	family("strata_qos_demand_bytes_per_second", "gauge", "Bytes per second asked of the data servers' schedulers, by class and job (job empty: none).")
	for _, u := range st.Use {
		fmt.Fprintf(w, "strata_qos_demand_bytes_per_second{class=%s,job=%s} %d\n", label(qos.Class(u.Class).String()), label(u.Job), u.Demand)
	}
	family("strata_qos_use_bytes_per_second", "gauge", "Bytes per second the data servers' schedulers let through, by class and job.")
	for _, u := range st.Use {
		fmt.Fprintf(w, "strata_qos_use_bytes_per_second{class=%s,job=%s} %d\n", label(qos.Class(u.Class).String()), label(u.Job), u.Use)
	}
	family("strata_qos_drain_backlog_bytes", "gauge", "Bytes a job tier's agents still have to drain.")
	for _, d := range st.Drains {
		fmt.Fprintf(w, "strata_qos_drain_backlog_bytes{job=%s} %d\n", label(strconv.FormatUint(uint64(d.Job), 10)), d.Backlog)
	}
	family("strata_qos_drain_rate_bytes_per_second", "gauge", "The rate a job tier drains at lately.")
	for _, d := range st.Drains {
		fmt.Fprintf(w, "strata_qos_drain_rate_bytes_per_second{job=%s} %d\n", label(strconv.FormatUint(uint64(d.Job), 10)), d.Rate)
	}
	family("strata_qos_drain_remaining_seconds", "gauge", "When a job tier's backlog is drained at its rate, from now (absent: unknown).")
	for _, d := range st.Drains {
		if d.ETA != 0 {
			fmt.Fprintf(w, "strata_qos_drain_remaining_seconds{job=%s} %g\n", label(strconv.FormatUint(uint64(d.Job), 10)), max(time.Unix(0, d.ETA).Sub(now).Seconds(), 0))
		}
	}
}
