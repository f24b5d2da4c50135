package ds

import (
	"context"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// heartbeatLogEvery is how often a failing heartbeat is logged again.
const heartbeatLogEvery = time.Minute

// heartbeatLoop registers the server with the MDS at once and then every
// interval until ctx ends. A failure is logged at most once per
// heartbeatLogEvery and is never fatal.
func (s *Server) heartbeatLoop(ctx context.Context, advertise string) {
	hb := heartbeater{
		s:        s,
		addr:     advertise,
		addrs:    strings.Split(s.cfg.MDS, ","),
		interval: s.cfg.HeartbeatInterval,
		lastAt:   s.clock(),
		tele:     telemetry{s: s},
	}
	for i := range hb.addrs {
		hb.addrs[i] = strings.TrimSpace(hb.addrs[i])
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		hb.beat(ctx)
		timer.Reset(hb.interval)
	}
}

// heartbeater is the state of the heartbeat loop, owned by its goroutine.
type heartbeater struct {
	s        *Server
	addr     string // this server's, as the MDS should call it
	addrs    []string
	next     int // index into addrs of the MDS to try
	interval time.Duration

	lastAt   time.Time // when load was last measured
	lastBusy int64     // s.busy then
	tele     telemetry // disk, network and scheduler rates (telemetry.go)

	failures  int       // consecutive failures
	loggedAt  time.Time // last failure log
	unlogged  int       // failures since then
	everBeats bool
}

func (h *heartbeater) beat(ctx context.Context) {
	s := h.s
	capacity, free := s.free()
	req := rpc.HeartbeatReq{
		ID:       s.cfg.ID,
		Addr:     h.addr,
		Node:     s.cfg.Node,
		Capacity: capacity,
		Free:     free,
		Load:     h.load(),
		Rack:     s.cfg.Rack,
	}
	s.qosReport(&req)
	req.Measure = h.tele.measure(ctx)
	// Try every MDS address once, starting with the last one that
	// answered, so a failed-over leader is found within one beat.
	var resp rpc.HeartbeatResp
	var err error
	for range h.addrs {
		err = s.hb.Call(ctx, h.addrs[h.next], rpc.MHeartbeat, &req, &resp)
		if err == nil || ctx.Err() != nil {
			break
		}
		h.next = (h.next + 1) % len(h.addrs)
	}
	if ctx.Err() != nil {
		return // closing
	}
	addr := h.addrs[h.next]
	if err != nil {
		now := s.clock()
		h.failures++
		h.unlogged++
		if h.failures == 1 || now.Sub(h.loggedAt) >= heartbeatLogEvery {
			s.log.Warn("heartbeat failed", "mds", s.cfg.MDS, "failures", h.failures, "since_last_log", h.unlogged, "err", err)
			h.loggedAt, h.unlogged = now, 0
		}
		return
	}
	if h.failures > 0 || !h.everBeats {
		s.log.Info("heartbeat accepted", "mds_addr", addr, "after_failures", h.failures)
	}
	h.failures, h.unlogged, h.everBeats = 0, 0, true
	if resp.IntervalMs != 0 {
		h.interval = time.Duration(resp.IntervalMs) * time.Millisecond
	}
	s.qosApply(&resp)
}

// load returns the mean number of calls in flight since the last call:
// time spent in calls over wall time (Little's law).
func (h *heartbeater) load() float64 {
	now := h.s.clock()
	busy := h.s.busy.Load()
	wall := now.Sub(h.lastAt)
	d := busy - h.lastBusy
	h.lastAt, h.lastBusy = now, busy
	if wall <= 0 {
		return 0
	}
	return float64(d) / float64(wall)
}
