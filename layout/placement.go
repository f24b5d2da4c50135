package layout

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// Candidate is a data server placement may choose.
type Candidate struct {
	ID       string
	Node     string // failure domain: never two columns of one file on one node
	Capacity int64
	Free     int64
	Up       bool
}

// Place picks width distinct, up candidates on distinct nodes, at random
// weighted by free space, so fuller servers receive fewer new columns. The
// result is in column order. rnd supplies the randomness (tests seed it).
func Place(cands []Candidate, width int, rnd *rand.Rand) ([]string, error) {
	pool := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if c.Up && c.Free > 0 {
			pool = append(pool, c)
		}
	}
	sort.Slice(pool, func(i, j int) bool { return pool[i].ID < pool[j].ID })
	nodes := map[string]bool{}
	for _, c := range pool {
		nodes[nodeOf(c)] = true
	}
	if width > len(nodes) {
		return nil, fmt.Errorf("%w: width %d needs %d data servers on distinct nodes, %d are up", ErrNoTargets, width, width, len(nodes))
	}
	out := make([]string, 0, width)
	used := map[string]bool{}
	for len(out) < width {
		var total float64
		for _, c := range pool {
			if !used[nodeOf(c)] {
				total += weight(c)
			}
		}
		x := rnd.Float64() * total
		pick := -1
		for i, c := range pool {
			if used[nodeOf(c)] {
				continue
			}
			pick = i
			if x -= weight(c); x < 0 {
				break
			}
		}
		used[nodeOf(pool[pick])] = true
		out = append(out, pool[pick].ID)
	}
	return out, nil
}

// BalancedSpread is how far apart the candidates' free fractions may be
// for PlaceNext to take them in turn rather than at random (Lustre's
// qos_threshold_rr default, 17%).
const BalancedSpread = 0.17

// RoundRobin is PlaceNext's position: the node a file starts on next and,
// per node, which of its servers it gives a column next. The zero value
// starts at the beginning.
type RoundRobin struct {
	next    int
	perNode map[string]int
}

// PlaceNext is Place, except that while the up candidates' free fractions
// are within BalancedSpread of each other it takes them in turn: nodes in
// name order from rr's position (a file's columns on distinct nodes), and
// a node's servers in turn, moving rr on. Files of the same width then
// spread their columns evenly over the nodes, where random picks leave
// some with twice the share of others for a while. Unbalanced candidates
// are placed as Place does, so that emptier servers fill faster.
func PlaceNext(cands []Candidate, width int, rr *RoundRobin, rnd *rand.Rand) ([]string, error) {
	return NewPlacer(cands).Next(width, rr, rnd)
}

// Placer is PlaceNext over one set of candidates with the work that
// depends only on them (grouping by node, sorting, the balance check)
// done once, for a caller that places many files on the same view. It
// does not change after NewPlacer; Next may be called concurrently if
// each caller's rr and rnd are its own.
type Placer struct {
	cands    []Candidate
	nodes    []string      // nodes with usable candidates, in name order
	byNode   [][]Candidate // per node of nodes, its usable candidates by id
	balanced bool          // free fractions within BalancedSpread
}

// NewPlacer groups cands for Next. It keeps cands: the caller must not
// change them afterwards.
func NewPlacer(cands []Candidate) *Placer {
	groups := map[string][]Candidate{}
	lo, hi := 2.0, -1.0
	for _, c := range cands {
		if c.Up && c.Free > 0 {
			groups[nodeOf(c)] = append(groups[nodeOf(c)], c)
			f := weight(c)
			lo, hi = min(lo, f), max(hi, f)
		}
	}
	p := &Placer{cands: cands, balanced: hi-lo <= BalancedSpread}
	for n := range groups {
		p.nodes = append(p.nodes, n)
	}
	sort.Strings(p.nodes)
	for _, n := range p.nodes {
		cs := groups[n]
		sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
		p.byNode = append(p.byNode, cs)
	}
	return p
}

// Next places a file of width columns as PlaceNext does.
func (p *Placer) Next(width int, rr *RoundRobin, rnd *rand.Rand) ([]string, error) {
	n := len(p.nodes)
	if n < width || !p.balanced {
		return Place(p.cands, width, rnd) // random, or says why not
	}
	if rr.perNode == nil {
		rr.perNode = map[string]int{}
	}
	start := ((rr.next % n) + n) % n
	out := make([]string, 0, width)
	for i := 0; i < width; i++ {
		j := (start + i) % n
		node, cs := p.nodes[j], p.byNode[j]
		k := rr.perNode[node] % len(cs)
		rr.perNode[node] = k + 1
		out = append(out, cs[k].ID)
	}
	step := width
	if width%n == 0 {
		step++ // every file would start on the same node
	}
	rr.next = (start + step) % n
	return out, nil
}

func nodeOf(c Candidate) string {
	if c.Node == "" {
		return c.ID
	}
	return c.Node
}

// weight grows with free space; a floor keeps nearly full servers usable.
func weight(c Candidate) float64 {
	w := float64(c.Free)
	if c.Capacity > 0 {
		w = float64(c.Free) / float64(c.Capacity)
	}
	if w < 0.01 {
		w = 0.01
	}
	return w
}
