package mds

import (
	"syscall"

	"github.com/strata-hpc/strata/layout"
)

// place picks targets for a layout of policy p (complete: width, unit and
// scheme set). If the width came only from the cluster default
// (widthSet false) and fewer usable data servers are up, the layout is as
// wide as the data servers that are up. what names the file in errors.
func (r *registry) place(p layout.Policy, widthSet bool, what string) (layout.Layout, error) {
	now := r.clock()
	r.mu.Lock()
	defer r.mu.Unlock()
	cands := make([]layout.Candidate, 0, len(r.ds))
	nodes := make(map[string]struct{}, len(r.ds))
	for id, d := range r.ds {
		c := layout.Candidate{
			ID:       id,
			Node:     d.node,
			Capacity: clampInt64(d.capacity),
			Free:     clampInt64(d.free),
			Up:       r.isUp(d, now),
		}
		cands = append(cands, c)
		if c.Up && c.Free > 0 {
			if c.Node == "" {
				nodes[id] = struct{}{}
			} else {
				nodes[c.Node] = struct{}{}
			}
		}
	}
	usable := len(nodes)
	if usable == 0 {
		return layout.Layout{}, errf(syscall.ENOSPC, "%s: no data servers are up", what)
	}
	w := p.Width
	if !widthSet && w > usable {
		w = usable
	}
	if w > usable {
		return layout.Layout{}, errf(syscall.ENOSPC, "%s: layout width %d needs %d data servers on distinct nodes, only %d are up", what, w, w, usable)
	}
	targets, err := layout.Place(cands, w, r.rnd)
	if err != nil {
		return layout.Layout{}, errf(syscall.ENOSPC, "%s: %v", what, err)
	}
	return layout.Layout{Width: w, Unit: p.Unit, Scheme: p.Scheme, Targets: targets}, nil
}

func clampInt64(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}
