package mds

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Data server add and drain.
//
// Adding a data server is starting one (`strata ds --id ... --mds ...`):
// its first heartbeat registers it (registerCmd) and placement uses it at
// once; the rebuild manager then moves existing components onto it while
// the fills of the data servers differ by more than RebalanceSpread
// (rebalance.go), and a drain of another server prefers the servers with
// the most free space.
//
// Draining one (`strata admin ds drain ID`) marks it draining in the FSM
// (drainCmd): placement skips it, and the rebuild manager moves every
// component off it, copying each from the draining server while it is up
// (from redundancy otherwise). A drain is refused, with the reason, when
// some file's component would have nowhere to go: no registered data
// server that is not draining is on a node the file does not use already,
// or the free space of the others is less than what the server holds.
// `strata admin ds list` shows the servers with how many components each
// still holds; a drained server holds none and can be stopped.

// setDraining replaces the registry's copy of the draining set.
func (r *registry) setDraining(ids map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !maps.Equal(r.draining, ids) {
		r.draining = ids
		r.view.dirty = true
	}
}

// syncDraining copies the FSM's draining set to the registry.
func (s *Server) syncDraining() {
	s.fsm.mu.RLock()
	ids := maps.Clone(s.fsm.st.rep.draining)
	s.fsm.mu.RUnlock()
	s.reg.setDraining(ids)
}

// dsView is what the rebuild manager and drain need of one data server's
// soft state.
type dsView struct {
	up       bool
	downFor  time.Duration // how long it has not been heard from past the timeout; 0 if up
	node     string
	capacity uint64
	free     uint64
	load     float64
	draining bool
}

// views returns the soft state of every data server the registry knows.
func (r *registry) views() map[string]dsView {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]dsView, len(r.ds))
	for id, d := range r.ds {
		v := dsView{up: r.isUp(d, now), node: d.node, capacity: d.capacity, free: d.free, load: d.load, draining: r.draining[id]}
		if !v.up && !d.lastSeen.IsZero() {
			v.downFor = now.Sub(d.lastSeen) - r.timeout
		}
		out[id] = v
	}
	return out
}

// nodeOf returns the failure domain of a registered data server: its
// rack if it has one, else its node (failureDomain).
func (st *state) nodeOf(id string) string {
	if d, ok := st.ds[id]; ok {
		return failureDomain(id, d.Node, d.Rack)
	}
	return id
}

// compBytes estimates the bytes component comp of layout l holds for a
// file of size bytes.
func compBytes(l layout.Layout, size uint64, comp int) uint64 {
	switch l.Scheme.Kind {
	case layout.KindRS:
		if comp >= l.Width {
			return uint64(l.ParitySize(int64(size)))
		}
	case layout.KindMirror:
		comp %= l.Width
	}
	return uint64(l.ColumnSize(int64(size), comp))
}

// drainPlan checks that every component on data server id has somewhere
// to go and returns the bytes to move; the caller holds fsm.mu.
func (st *state) drainPlan(id string) (bytes uint64, err error) {
	nodes := map[string]bool{} // nodes with a server that can take data
	for o := range st.ds {
		if o != id && !st.rep.draining[o] {
			nodes[st.nodeOf(o)] = true
		}
	}
	for _, ino := range slices.Sorted(maps.Keys(st.inodes)) {
		n := st.inodes[ino]
		if !n.isFile() {
			continue
		}
		l := n.Layout
		for comp, t := range l.Targets {
			if t != id {
				continue
			}
			bytes += compBytes(l, n.Size, comp)
			free := maps.Clone(nodes)
			for j, o := range l.Targets {
				if j != comp {
					delete(free, st.nodeOf(o))
				}
			}
			if len(free) == 0 {
				return 0, fmt.Errorf("inode %d (layout %s) has component %d on %s and its other %d components on %d nodes; no data server that is not draining is on another node", ino, l, comp, id, len(l.Targets)-1, len(nodes)-len(free))
			}
		}
	}
	return bytes, nil
}

// dsDrain serves rpc.MDSDrain.
func (s *Server) dsDrain(ctx context.Context, r *rpc.DrainReq) (*rpc.DSListResp, error) {
	s.fsm.mu.RLock()
	_, known := s.fsm.st.ds[r.ID]
	var need uint64
	var err error
	if known && !r.Cancel {
		need, err = s.fsm.st.drainPlan(r.ID)
	}
	s.fsm.mu.RUnlock()
	switch {
	case !known:
		return nil, errf(syscall.ENOENT, "data server %q is not registered (strata admin ds list shows them)", r.ID)
	case err != nil:
		return nil, errf(syscall.ENOSPC, "cannot drain %s: its data has nowhere to go: %v", r.ID, err)
	}
	if !r.Cancel {
		var free uint64
		for id, v := range s.reg.views() {
			if id != r.ID && v.up && !v.draining {
				free += v.free
			}
		}
		if need > free {
			return nil, errf(syscall.ENOSPC, "cannot drain %s: it holds about %s, the other data servers that are up have %s free", r.ID, layout.FormatSize(int64(need)), layout.FormatSize(int64(free)))
		}
	}
	if _, err := s.apply(cmdDrain, &drainCmd{ID: r.ID, Drain: !r.Cancel}); err != nil {
		return nil, err
	}
	s.syncDraining()
	s.log.Info("ds_drain", "ds_id", r.ID, "drain", !r.Cancel, "bytes", need)
	s.rb.kickNow()
	return s.dsList(ctx, &rpc.Empty{})
}

// dsList serves rpc.MDSList: every registered data server with its state
// and what the layouts place on it.
func (s *Server) dsList(ctx context.Context, _ *rpc.Empty) (*rpc.DSListResp, error) {
	cl, err := s.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	type count struct{ comps, stale, bytes uint64 }
	counts := map[string]*count{}
	s.fsm.mu.RLock()
	st := s.fsm.st
	for _, n := range st.inodes {
		if !n.onDS() {
			continue
		}
		stale := st.staleOf(n)
		for comp, id := range n.Layout.Targets {
			c := counts[id]
			if c == nil {
				c = &count{}
				counts[id] = c
			}
			c.comps++
			c.bytes += compBytes(n.Layout, n.Size, comp)
			if stale.has(uint32(comp)) {
				c.stale++
			}
		}
	}
	draining := maps.Clone(st.rep.draining)
	s.fsm.mu.RUnlock()
	resp := &rpc.DSListResp{}
	for _, d := range cl.DataSvrs {
		e := rpc.DSStatus{Info: d, Draining: draining[d.ID]}
		if c := counts[d.ID]; c != nil {
			e.Components, e.Stale, e.Bytes = c.comps, c.stale, c.bytes
		}
		resp.DataSvrs = append(resp.DataSvrs, e)
	}
	slices.SortFunc(resp.DataSvrs, func(a, b rpc.DSStatus) int { return strings.Compare(a.Info.ID, b.Info.ID) })
	return resp, nil
}
