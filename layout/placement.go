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
