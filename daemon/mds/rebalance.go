package mds

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Rebalancing. A data server that joins an existing cluster starts empty,
// and new files alone fill it slowly; an admin expects the data to spread
// over it, as after `ceph osd in` or a BeeGFS/Lustre migration. When the
// fill (used bytes / capacity, as the data servers report them) of two
// data servers that are up and not draining differs by more than
// RebalanceSpread, the rebuild manager moves components from the fullest
// to the emptiest until the spread of what the layouts place is under half
// of it, or no move narrows it (components are indivisible). A move is a rebuild with reason "rebalance": copied from the
// component itself (from redundancy if it fails), throttled and yielding
// to foreground I/O with the other rebuilds, swapped into the layout once
// the file has no writer, the old copy collected as a stray. Moves are
// planned only when no component needs a rebuild for redundancy, a drain
// or a scrub repair, at most rebalanceBatch at a time; every scan plans
// them afresh, so they survive a change of leader like any rebuild.

// rebalanceBatch bounds the moves one scan plans (per RebuildParallel).
const rebalanceBatch = 4

// rebalanceQuiet is how long the manager plans no moves after a plan found
// none (the layouts are as even as whole components allow, though the
// reported fills may still differ: a moved component's old copy counts
// until it is collected), unless the data servers that are up change. A
// plan reads every layout.
const rebalanceQuiet = time.Minute

// mayPlanMoves reports whether a scan may plan moves: not within
// rebalanceQuiet of a plan that found none, unless the data servers that
// are up (or their capacities) changed since.
func (rb *rebuilder) mayPlanMoves(views map[string]dsView) bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.s.clock().After(rb.quietUntil) || serversKey(views) != rb.quietKey
}

// quietMoves starts a quiet period after a plan that found no move.
func (rb *rebuilder) quietMoves(views map[string]dsView) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.quietUntil, rb.quietKey = rb.s.clock().Add(rebalanceQuiet), serversKey(views)
}

// serversKey names the data servers that are up and not draining, with
// their capacities.
func serversKey(views map[string]dsView) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(views)) {
		if v := views[id]; v.up && !v.draining {
			fmt.Fprintf(&b, "%s:%d,", id, v.capacity)
		}
	}
	return b.String()
}

// rebalanceServer is one data server as rebalancing sees it.
type rebalanceServer struct {
	id       string
	node     string
	capacity float64
	bytes    float64 // what the layouts place on it, with the planned moves
}

func (r *rebalanceServer) fill() float64 { return r.bytes / r.capacity }

// movable is one component rebalancing may move.
type movable struct {
	key   compKey
	gen   uint64
	from  string
	size  uint64
	nodes map[string]bool // the nodes of the file's other components
}

// move is one planned move.
type move struct {
	c  movable
	to string
}

// needsRebalance reports whether the reported fills of the data servers
// that are up and not draining differ by more than spread: the cheap test
// before a scan reads every layout.
func needsRebalance(views map[string]dsView, spread float64) bool {
	if spread <= 0 {
		return false
	}
	lo, hi, n := 2.0, -1.0, 0
	for _, v := range views {
		if !v.up || v.draining || v.capacity == 0 {
			continue
		}
		used := v.capacity - min(v.free, v.capacity)
		f := float64(used) / float64(v.capacity)
		lo, hi, n = min(lo, f), max(hi, f), n+1
	}
	return n >= 2 && hi-lo > spread
}

// rebalanceCandidates lists the servers rebalancing may use and the
// components it may move, from the layouts; running moves are counted
// where they go. The caller holds the FSM's lock.
func (st *state) rebalanceCandidates(views map[string]dsView, running []move) (map[string]*rebalanceServer, []movable) {
	servers := map[string]*rebalanceServer{}
	for id, v := range views {
		if _, ok := st.ds[id]; ok && v.up && !v.draining && v.capacity > 0 {
			servers[id] = &rebalanceServer{id: id, node: st.nodeOf(id), capacity: float64(v.capacity)}
		}
	}
	busy := map[compKey]bool{}
	for _, m := range running {
		busy[m.c.key] = true
		if s := servers[m.c.from]; s != nil {
			s.bytes -= float64(m.c.size)
		}
		if s := servers[m.to]; s != nil {
			s.bytes += float64(m.c.size)
		}
	}
	var comps []movable
	for ino, n := range st.inodes {
		if !n.onDS() {
			continue
		}
		l := n.Layout
		stale := st.staleOf(n)
		for comp, id := range l.Targets {
			size := compBytes(l, n.Size, comp)
			s := servers[id]
			if s == nil {
				continue
			}
			s.bytes += float64(size)
			k := compKey{Ino: ino, Comp: uint32(comp)}
			if _, rebuilding := st.rep.rebuilds[k]; size == 0 || rebuilding || busy[k] || stale.has(k.Comp) {
				continue
			}
			nodes := map[string]bool{}
			for j, o := range l.Targets {
				if j != comp {
					nodes[st.nodeOf(o)] = true
				}
			}
			comps = append(comps, movable{key: k, gen: l.Generation, from: id, size: size, nodes: nodes})
		}
	}
	return servers, comps
}

// planRebalance chooses up to limit moves that bring the fills of servers
// within spread/2 of each other. Each move is from the fullest server
// that has a useful one, to one of the emptiest on a node the file does
// not use, of the component whose move leaves the two servers' fills
// closest; a move must narrow the gap between the two (so every move
// lowers the variance of the fills, and planning ends). It changes
// servers' bytes.
func planRebalance(servers map[string]*rebalanceServer, comps []movable, spread float64, limit int) []move {
	if len(servers) < 2 || spread <= 0 {
		return nil
	}
	byServer := map[string][]movable{}
	for _, c := range comps {
		byServer[c.from] = append(byServer[c.from], c)
	}
	for _, cs := range byServer {
		slices.SortFunc(cs, func(a, b movable) int {
			return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.key.Ino, b.key.Ino), cmp.Compare(a.key.Comp, b.key.Comp))
		})
	}
	order := slices.Sorted(maps.Keys(servers))
	byFill := func() []*rebalanceServer {
		out := make([]*rebalanceServer, 0, len(order))
		for _, id := range order {
			out = append(out, servers[id])
		}
		slices.SortStableFunc(out, func(a, b *rebalanceServer) int { return cmp.Compare(b.fill(), a.fill()) })
		return out
	}
	moved := map[compKey]bool{}
	exhausted := map[string]bool{}
	var out []move
	for len(out) < limit {
		ss := byFill()
		if ss[0].fill()-ss[len(ss)-1].fill() <= spread/2 {
			break
		}
		var src *rebalanceServer
		for _, s := range ss {
			if !exhausted[s.id] {
				src = s
				break
			}
		}
		if src == nil {
			break
		}
		best, bestGap := move{}, -1.0
		for j, tried := len(ss)-1, 0; j >= 0 && tried < rebalanceTargets; j-- {
			dst := ss[j]
			gap := src.fill() - dst.fill()
			if dst == src || gap <= spread/2 {
				break
			}
			tried++
			for _, c := range byServer[src.id] {
				if moved[c.key] || c.nodes[dst.node] {
					continue
				}
				x := float64(c.size)
				after := math.Abs((src.bytes-x)/src.capacity - (dst.bytes+x)/dst.capacity)
				if after < gap-1e-12 && (bestGap < 0 || after < bestGap) {
					best, bestGap = move{c: c, to: dst.id}, after
				}
			}
		}
		if bestGap < 0 {
			exhausted[src.id] = true
			continue
		}
		moved[best.c.key] = true
		src.bytes -= float64(best.c.size)
		servers[best.to].bytes += float64(best.c.size)
		out = append(out, best)
	}
	return out
}

// rebalanceTargets is how many of the emptiest servers a move considers.
const rebalanceTargets = 4
