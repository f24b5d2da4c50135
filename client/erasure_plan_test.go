package client

import (
	"math/rand/v2"
	"testing"

	"github.com/strata-hpc/strata/layout"
)

// checkPlan checks planWrite against the bytes of the write: every
// (row, unit, in-unit byte) the write touches is in exactly one span, and
// a span touches only rows and in-unit bytes of the write.
func checkPlan(t *testing.T, k int, unit, chunk, off, n int64) {
	t.Helper()
	l := layout.Layout{Width: k, Unit: unit, Scheme: layout.Scheme{Kind: layout.KindRS, K: k, M: 1}}
	plan := planWrite(l, chunk, off, n)
	row := l.RowSize()
	// covered[r][x]: how many spans cover in-unit byte x of row r.
	covered := map[int64][]int{}
	for _, ws := range plan {
		sp := ws.sp
		if sp.lo < 0 || sp.hi > unit || sp.lo >= sp.hi || sp.rows < 1 || sp.colLen() > chunk {
			t.Fatalf("k=%d unit=%d chunk=%d write [%d,+%d): bad span %v", k, unit, chunk, off, n, sp)
		}
		if sp.rows > 1 && (sp.lo != 0 || sp.hi != unit) {
			t.Fatalf("k=%d unit=%d chunk=%d write [%d,+%d): multi-row span %v is not whole units", k, unit, chunk, off, n, sp)
		}
		for r := sp.row; r < sp.row+sp.rows; r++ {
			if ws.full && (r*row < off || (r+1)*row > off+n) {
				t.Fatalf("write [%d,+%d): full span %v covers row %d only in part", off, n, sp, r)
			}
			if covered[r] == nil {
				covered[r] = make([]int, unit)
			}
			for x := sp.lo; x < sp.hi; x++ {
				covered[r][x]++
			}
		}
	}
	touched := map[[2]int64]bool{}
	for b := off; b < off+n; b++ {
		r, x := b/row, b%unit
		touched[[2]int64{r, x}] = true
		if c := covered[r]; c == nil || c[x] != 1 {
			t.Fatalf("k=%d unit=%d chunk=%d write [%d,+%d): byte %d (row %d, in-unit %d) in %v spans", k, unit, chunk, off, n, b, r, x, c)
		}
	}
	for r, c := range covered {
		for x, v := range c {
			if v > 1 || (v == 1 && !touched[[2]int64{r, int64(x)}]) {
				t.Fatalf("k=%d unit=%d chunk=%d write [%d,+%d): row %d in-unit %d covered %d times, touched %v", k, unit, chunk, off, n, r, x, v, touched[[2]int64{r, int64(x)}])
			}
		}
	}
}

func TestPlanWrite(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 9))
	for i := 0; i < 3000; i++ {
		k := 1 + rnd.IntN(5)
		unit := int64(1 + rnd.IntN(24))
		chunk := int64(1 + rnd.IntN(60))
		off := rnd.Int64N(10 * int64(k) * unit)
		n := 1 + rnd.Int64N(6*int64(k)*unit)
		checkPlan(t, k, unit, chunk, off, n)
	}
}

// FuzzPlanWrite: planWrite's spans cover each touched row byte once, for
// any geometry and write.
func FuzzPlanWrite(f *testing.F) {
	f.Add(uint8(4), uint8(8), uint8(16), uint16(5), uint16(70))
	f.Add(uint8(2), uint8(16), uint8(4), uint16(30), uint16(3))
	f.Fuzz(func(t *testing.T, k, unit, chunk uint8, off, n uint16) {
		if k == 0 || k > 16 || unit == 0 || unit > 64 || chunk == 0 || n == 0 || n > 4000 {
			return
		}
		checkPlan(t, int(k), int64(unit), int64(chunk), int64(off), int64(n))
	})
}
