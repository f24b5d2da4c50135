package mds

import (
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// registry is the soft state of the data servers, kept in the leader's
// memory only: what each heartbeat reported and when it was heard. A data
// server is up if heard from within the heartbeat timeout. The durable part
// (id, address, node) is FSM state (dsRecord), changed through raft.
//
// After a restart or a change of leader every data server is down until
// its next heartbeat, which is at most one interval away.
type registry struct {
	timeout time.Duration
	clock   func() time.Time

	mu       sync.Mutex
	ds       map[string]*dsSoft
	rnd      *rand.Rand        // placement randomness, under mu
	rr       layout.RoundRobin // where round-robin placement goes next (layout.PlaceNext), under mu
	view     placeable         // placement's cache, under mu
	draining map[string]bool   // copied from the FSM (drain.go): never placed on
}

// dsSoft is the last heartbeat of one data server.
type dsSoft struct {
	node     string // failure domain (failureDomain): the rack if set, else the node
	capacity uint64
	free     uint64
	load     float64
	lastSeen time.Time
	rack     bool // node is a rack
	qos      rpc.QoSServer
}

func newRegistry(timeout time.Duration, clock func() time.Time, seed uint64) *registry {
	return &registry{
		timeout: timeout,
		clock:   clock,
		ds:      map[string]*dsSoft{},
		rnd:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// beat records a heartbeat; it reports whether the data server was down
// (or unknown) before it.
func (r *registry) beat(h *rpc.HeartbeatReq) (cameUp bool) {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.ds[h.ID]
	if d == nil {
		d = &dsSoft{}
		r.ds[h.ID] = d
	}
	cameUp = !r.isUp(d, now)
	d.node, d.capacity, d.free, d.load, d.lastSeen = failureDomain(h.ID, h.Node, h.Rack), h.Capacity, h.Free, h.Load, now
	d.rack = h.Rack != ""
	d.qos = rpc.QoSServer{ID: h.ID, Version: h.QoSVersion, Inflight: h.QoSInflight, Queued: h.QoSQueued, Served: h.QoSServed, LastSeen: now.UnixNano()}
	r.view.dirty = true
	return cameUp
}

func (r *registry) isUp(d *dsSoft, now time.Time) bool {
	return d != nil && !d.lastSeen.IsZero() && now.Sub(d.lastSeen) <= r.timeout
}

// up reports whether data server id is up.
func (r *registry) up(id string) bool {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isUp(r.ds[id], now)
}

// info fills in the soft state of one registered data server.
func (r *registry) info(rec dsRecord, now time.Time) rpc.DSInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := rpc.DSInfo{ID: rec.ID, Addr: rec.Addr, Node: rec.Node, Rack: rec.Rack, State: "down"}
	if d := r.ds[rec.ID]; d != nil {
		in.Capacity, in.Free, in.Load, in.LastSeen = d.capacity, d.free, d.load, d.lastSeen.UnixNano()
		if r.isUp(d, now) {
			in.State = "up"
		}
	}
	return in
}

// totals sums the capacity and free space of the data servers that are up.
func (r *registry) totals() (capacity, free uint64, up int) {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.ds {
		if r.isUp(d, now) {
			capacity += d.capacity
			free += d.free
			up++
		}
	}
	return capacity, free, up
}

// takeOffice gives every registered data server one timeout of grace when
// this node becomes the leader: they were heartbeating the old leader, and
// will find this one within an interval.
func (r *registry) takeOffice(known map[string]dsRecord) {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, rec := range known {
		if d := r.ds[id]; d == nil {
			// Unknown space: placeable, all alike, until its first
			// heartbeat; its failure domain is the registered one.
			r.ds[id] = &dsSoft{node: failureDomain(id, rec.Node, rec.Rack), rack: rec.Rack != "", capacity: 1, free: 1, lastSeen: now}
		} else if !r.isUp(d, now) {
			d.lastSeen = now
		}
	}
	r.view.dirty = true
}

// checkDSNames refuses a registration whose id, node or rack is not a safe
// name (rpc.CheckName) or whose address is empty or not printable: the
// leader calls it before raft, so a refused heartbeat costs no log space,
// and the FSM again.
func checkDSNames(r *rpc.HeartbeatReq) error {
	if err := rpc.CheckName("data server id", r.ID); err != nil {
		return errf(syscall.EINVAL, "heartbeat: %v", err)
	}
	if r.Node != "" {
		if err := rpc.CheckName("node", r.Node); err != nil {
			return errf(syscall.EINVAL, "heartbeat of %s: %v", r.ID, err)
		}
	}
	if r.Rack != "" {
		if err := rpc.CheckName("rack", r.Rack); err != nil {
			return errf(syscall.EINVAL, "heartbeat of %s: %v", r.ID, err)
		}
	}
	if r.Addr == "" || len(r.Addr) > 2*rpc.MaxNameLen {
		return errf(syscall.EINVAL, "heartbeat of %s: address %q: empty or too long", r.ID, r.Addr)
	}
	for _, c := range r.Addr {
		if !unicode.IsPrint(c) || unicode.IsSpace(c) {
			return errf(syscall.EINVAL, "heartbeat of %s: address %q holds white space or a control character", r.ID, r.Addr)
		}
	}
	return nil
}
