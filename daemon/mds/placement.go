package mds

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-hpc/strata/layout"
)

// placeable is the registry's cached view for placement: the candidates
// that are up and have free space, sorted by id, and how many distinct
// nodes they are on. It is rebuilt when a heartbeat changed something or
// when one of its servers may have timed out.
type placeable struct {
	cands      []layout.Candidate
	placer     *layout.Placer // over cands
	nodes      int            // distinct failure domains
	racks      bool           // some are racks
	validUntil time.Time      // the earliest time one of cands stops being up
	dirty      bool
}

// rebuildLocked recomputes the placement view; r.mu is held.
func (r *registry) rebuildLocked(now time.Time) {
	v := &r.view
	v.cands, v.validUntil, v.dirty, v.racks = v.cands[:0], time.Time{}, false, false
	nodes := map[string]struct{}{}
	for id, d := range r.ds {
		if !r.isUp(d, now) || d.free == 0 || r.draining[id] {
			continue
		}
		v.cands = append(v.cands, layout.Candidate{ID: id, Node: d.node, Capacity: clampInt64(d.capacity), Free: clampInt64(d.free), Up: true})
		node := d.node
		if node == "" {
			node = id
		}
		nodes[node] = struct{}{}
		v.racks = v.racks || d.rack
		if until := d.lastSeen.Add(r.timeout); v.validUntil.IsZero() || until.Before(v.validUntil) {
			v.validUntil = until
		}
	}
	slices.SortFunc(v.cands, func(a, b layout.Candidate) int { return strings.Compare(a.ID, b.ID) })
	v.nodes = len(nodes)
	v.placer = layout.NewPlacer(slices.Clone(v.cands))
}

// place picks targets for a layout of policy p (complete: width, unit and
// scheme set) with layout.Place over the data servers that are up. If the
// width came only from the cluster default (widthSet false) and fewer
// nodes have usable data servers, the layout is as wide as there are. The
// error is a sentence for the caller to prefix with what it was placing.
func (r *registry) place(p layout.Policy, widthSet bool) (layout.Layout, error) {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.view.dirty || !now.Before(r.view.validUntil) {
		r.rebuildLocked(now)
	}
	usable := r.view.nodes
	if usable == 0 {
		return layout.Layout{}, errNoDataServers
	}
	w := p.Width
	copies := p.Scheme.Components(w) / w
	if !widthSet && p.Scheme.Kind != layout.KindRS && w*copies > usable {
		w = max(1, usable/copies)
	}
	p.Width = w
	if need := p.Components(); need > usable {
		return layout.Layout{}, fmt.Errorf("layout %s needs %d data servers on distinct %s, only %d are up", needs(p), need, domains(r.view.racks), usable)
	}
	targets, err := r.view.placer.Next(p.Components(), &r.rr, r.rnd)
	if err != nil {
		return layout.Layout{}, err
	}
	return layout.Layout{Width: w, Unit: p.Unit, Scheme: p.Scheme, Targets: targets}, nil
}

// fits checks that the registered data servers are on enough distinct
// nodes for a layout of policy p (an unset width counting as the least).
// It is deterministic: the registry's durable part is FSM state.
func (st *state) fits(p layout.Policy) error {
	if p.Width == 0 && !p.HasScheme {
		return nil // a unit alone needs nothing
	}
	nodes := map[string]bool{}
	racks := false
	for id, d := range st.ds {
		nodes[failureDomain(id, d.Node, d.Rack)] = true
		racks = racks || d.Rack != ""
	}
	if need := p.Components(); need > len(nodes) {
		return fmt.Errorf("%s needs %d data servers on distinct %s, %d registered", needs(p), need, domains(racks), len(nodes))
	}
	return nil
}

// failureDomain is what placement keeps the columns of a file apart by:
// the data server's rack where one is set ("rack:" and its name), else its
// node, else its id.
func failureDomain(id, node, rack string) string {
	switch {
	case rack != "":
		return "rack:" + rack
	case node != "":
		return node
	}
	return id
}

// domains names the failure domains in messages.
func domains(racks bool) string {
	if racks {
		return "failure domains (racks, where set, else nodes)"
	}
	return "nodes"
}

// needs names what a layout of policy p spans data servers for.
func needs(p layout.Policy) string {
	switch {
	case p.Scheme.Kind == layout.KindRS:
		return "scheme " + p.Scheme.String()
	case p.Scheme.Kind == layout.KindMirror && p.Width == 0:
		return "scheme " + p.Scheme.String()
	case p.Scheme.Kind == layout.KindMirror:
		return fmt.Sprintf("width %d with scheme %s", p.Width, p.Scheme)
	}
	return fmt.Sprintf("width %d", max(p.Width, 1))
}

func clampInt64(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}
