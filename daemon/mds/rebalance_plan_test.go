package mds

import (
	"fmt"
	"testing"
)

// TestPlanRebalance: moves go from the fullest servers to the empty one,
// never onto a node the file already uses, and stop once the fills are
// within half the spread; balanced servers plan nothing.
func TestPlanRebalance(t *testing.T) {
	const mib = 1 << 20
	servers := func(bytes ...float64) map[string]*rebalanceServer {
		out := map[string]*rebalanceServer{}
		for i, b := range bytes {
			id := fmt.Sprintf("ds%d", i+1)
			out[id] = &rebalanceServer{id: id, node: id, capacity: 100 * mib, bytes: b * mib}
		}
		return out
	}
	// ds1 and ds2 hold 40 one-MiB components each; ds3 is new. Half of
	// the files also use ds3's node: those cannot move there.
	var comps []movable
	for i := range 80 {
		from := "ds1"
		if i%2 == 1 {
			from = "ds2"
		}
		nodes := map[string]bool{"ds4": true}
		if i%4 < 2 {
			nodes["ds3"] = true
		}
		comps = append(comps, movable{key: compKey{Ino: uint64(i + 10)}, gen: 1, from: from, size: mib, nodes: nodes})
	}
	s := servers(40, 40, 0)
	moves := planRebalance(s, comps, 0.10, 1000)
	for _, m := range moves {
		if m.to != "ds3" {
			t.Errorf("move of inode %d to %s, want ds3 (the empty one)", m.c.key.Ino, m.to)
		}
		if m.c.nodes["ds3"] {
			t.Errorf("inode %d moved onto a node it uses already", m.c.key.Ino)
		}
	}
	lo, hi := 1.0, 0.0
	for _, sv := range s {
		lo, hi = min(lo, sv.fill()), max(hi, sv.fill())
	}
	if hi-lo > 0.05 || len(moves) == 0 {
		t.Fatalf("after %d moves the fills are %.2f..%.2f, want within 0.05", len(moves), lo, hi)
	}
	if again := planRebalance(s, comps, 0.10, 1000); len(again) != 0 {
		t.Errorf("a balanced cluster plans %d more moves", len(again))
	}
	// Components as large as the gap: moving one from a full server to the
	// empty one narrows it, though it overshoots the mean.
	var big []movable
	for i, from := range []string{"ds1", "ds1", "ds1", "ds2", "ds2", "ds2", "ds3", "ds3", "ds3", "ds4", "ds4"} {
		big = append(big, movable{key: compKey{Ino: uint64(i + 100)}, gen: 1, from: from, size: 24 * mib, nodes: map[string]bool{}})
	}
	s = servers(72, 72, 72, 48, 0)
	if got := planRebalance(s, big, 0.10, 1000); len(got) < 2 {
		t.Errorf("24 MiB components over fills 72%%/72%%/72%%/48%%/0%%: %d moves, want at least 2", len(got))
	} else if f := s["ds5"].fill(); f < 0.40 || f > 0.60 {
		t.Errorf("ds5 ends at %.2f", f)
	}
	if got := planRebalance(servers(40, 40, 0), comps, 0.10, 3); len(got) != 3 {
		t.Errorf("limit 3: %d moves", len(got))
	}
	if got := planRebalance(servers(40, 40, 0), comps, -1, 1000); len(got) != 0 {
		t.Errorf("rebalancing off: %d moves", len(got))
	}
}

// TestNeedsRebalance: the cheap test on the reported fills ignores
// servers that are down, draining or of unknown capacity.
func TestNeedsRebalance(t *testing.T) {
	v := map[string]dsView{
		"a": {up: true, capacity: 100, free: 50},
		"b": {up: true, capacity: 100, free: 45},
		"c": {up: false, capacity: 100, free: 100},
		"d": {up: true, draining: true, capacity: 100, free: 100},
	}
	if needsRebalance(v, 0.10) {
		t.Error("fills 50% and 55% need no rebalance at spread 10%")
	}
	v["e"] = dsView{up: true, capacity: 100, free: 100}
	if !needsRebalance(v, 0.10) {
		t.Error("an empty server beside 50% ones needs a rebalance")
	}
	if needsRebalance(v, -1) {
		t.Error("rebalancing off")
	}
}
