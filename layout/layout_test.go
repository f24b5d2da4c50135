package layout

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestExtentsCoverColumns checks the stripe arithmetic against a brute
// force byte-by-byte mapping, and ColumnSize against the extents.
func TestExtentsCoverColumns(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		l := Layout{Width: 1 + rnd.IntN(5), Unit: int64(1+rnd.IntN(4)) * 16}
		size := rnd.Int64N(2000)
		colLen := make([]int64, l.Width)
		var pos int64
		for _, e := range l.Extents(0, size) {
			if e.FileOff != pos {
				t.Fatalf("%+v: extent at %d, want %d", l, e.FileOff, pos)
			}
			for b := int64(0); b < e.Len; b++ {
				f := e.FileOff + b
				unit := f / l.Unit
				if int(unit%int64(l.Width)) != e.Col || e.ColOff+b != (unit/int64(l.Width))*l.Unit+f%l.Unit {
					t.Fatalf("%+v: byte %d misplaced in %+v", l, f, e)
				}
			}
			colLen[e.Col] = max(colLen[e.Col], e.ColOff+e.Len)
			pos += e.Len
		}
		for c := range colLen {
			if got := l.ColumnSize(size, c); got != colLen[c] {
				t.Fatalf("%+v size %d: ColumnSize(%d) = %d, want %d", l, size, c, got, colLen[c])
			}
		}
	}
}

func TestPlace(t *testing.T) {
	cands := []Candidate{
		{ID: "a", Node: "n1", Capacity: 100, Free: 90, Up: true},
		{ID: "b", Node: "n1", Capacity: 100, Free: 90, Up: true},
		{ID: "c", Node: "n2", Capacity: 100, Free: 90, Up: true},
		{ID: "d", Node: "n3", Capacity: 100, Free: 1, Up: true},
		{ID: "e", Node: "n4", Capacity: 100, Free: 90, Up: false},
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		got, err := Place(cands, 3, rnd)
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]bool{}
		for _, id := range got {
			for _, c := range cands {
				if c.ID == id {
					if nodes[c.Node] || !c.Up {
						t.Fatalf("placement %v reuses node %s or a down server", got, c.Node)
					}
					nodes[c.Node] = true
				}
			}
			counts[id]++
		}
	}
	if _, err := Place(cands, 4, rnd); err == nil {
		t.Fatal("width 4 over 3 up nodes was placed")
	}
	// Width 2 leaves a choice: the nearly full server must be picked less.
	counts = map[string]int{}
	for i := 0; i < 2000; i++ {
		got, _ := Place(cands, 2, rnd)
		for _, id := range got {
			counts[id]++
		}
	}
	if counts["d"] >= counts["c"]/2 {
		t.Fatalf("nearly full server chosen %d times vs %d: placement ignores free space", counts["d"], counts["c"])
	}
}

func TestValidateTargets(t *testing.T) {
	rs := Scheme{Kind: KindRS, K: 4, M: 2}
	for _, tc := range []struct {
		l   Layout
		err string
	}{
		{Layout{Width: 4, Unit: 1 << 20, Scheme: rs, Targets: []string{"a", "b", "c", "d", "e", "f"}}, ""},
		{Layout{Width: 4, Unit: 1 << 20, Scheme: rs, Targets: []string{"a", "b", "c", "d"}}, "has 4 targets, want 6"},
		{Layout{Width: 2, Unit: 1 << 20, Scheme: rs, Targets: []string{"a", "b", "c", "d", "e", "f"}}, "width 2 does not match scheme rs:4+2"},
		{Layout{Width: 2, Unit: 1 << 20, Scheme: Scheme{Kind: KindMirror, N: 2}, Targets: []string{"a", "b", "c", "d"}}, ""},
		{Layout{Width: 2, Unit: 1 << 20, Scheme: Scheme{Kind: KindMirror, N: 2}, Targets: []string{"a", "b", "c", "a"}}, `two components on data server "a"`},
	} {
		err := tc.l.Validate()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v: Validate = %v, want %q", tc.l, err, tc.err)
		}
	}
	l := Layout{Width: 3, Unit: 4096, Scheme: Scheme{Kind: KindMirror, N: 2}}
	if l.MirrorComponent(2, 1) != 5 || l.MirrorComponent(0, 0) != 0 {
		t.Fatal("mirror component order")
	}
	r := Layout{Width: 4, Unit: 100, Scheme: rs}
	for size, want := range map[int64]int64{0: 0, 1: 100, 400: 100, 401: 200, 800: 200} {
		if got := r.ParitySize(size); got != want {
			t.Errorf("ParitySize(%d) = %d, want %d", size, got, want)
		}
	}
}

// TestPlaceNext: balanced servers are taken in turn, so every node gets
// the same share of columns (shared by its servers) and no file has two on
// one node; unbalanced ones are placed at random weighted by free space.
func TestPlaceNext(t *testing.T) {
	cands := []Candidate{
		{ID: "a", Node: "n1", Capacity: 100, Free: 90, Up: true},
		{ID: "b", Node: "n2", Capacity: 100, Free: 85, Up: true},
		{ID: "c", Node: "n3", Capacity: 100, Free: 95, Up: true},
		{ID: "d", Node: "n4", Capacity: 100, Free: 90, Up: true},
		{ID: "e", Node: "n4", Capacity: 100, Free: 90, Up: true},
		{ID: "f", Node: "n5", Capacity: 100, Free: 90, Up: false},
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, width := range []int{1, 2, 3, 4} {
		var rr RoundRobin
		counts := map[string]int{}
		for i := 0; i < 100*width; i++ {
			got, err := PlaceNext(cands, width, &rr, rnd)
			if err != nil {
				t.Fatal(err)
			}
			nodes := map[string]bool{}
			for _, id := range got {
				for _, c := range cands {
					if c.ID == id && (nodes[c.Node] || !c.Up) {
						t.Fatalf("width %d: placement %v reuses node %s or a down server", width, got, c.Node)
					}
					if c.ID == id {
						nodes[c.Node] = true
					}
				}
				counts[id]++
			}
		}
		// Nodes n1..n4 alike; n4's share split between d and e.
		perNode := []int{counts["a"], counts["b"], counts["c"], counts["d"] + counts["e"]}
		if slices.Min(perNode) != slices.Max(perNode) || max(counts["d"]-counts["e"], counts["e"]-counts["d"]) > 1 {
			t.Errorf("width %d: balanced servers got %v columns: not even", width, counts)
		}
	}
	// One server much fuller: random, weighted by free space.
	full := append([]Candidate(nil), cands...)
	full[2].Free = 5
	var rr RoundRobin
	counts := map[string]int{}
	for i := 0; i < 2000; i++ {
		got, _ := PlaceNext(full, 2, &rr, rnd)
		for _, id := range got {
			counts[id]++
		}
	}
	if counts["c"] >= counts["a"]/2 {
		t.Errorf("the fuller server got %d columns vs %d: placement ignores free space", counts["c"], counts["a"])
	}
	if _, err := PlaceNext(cands, 5, new(RoundRobin), rnd); err == nil {
		t.Error("width 5 over 4 up nodes was placed")
	}
}
