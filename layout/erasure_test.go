package layout

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/reedsolomon"
)

// TestCodecGolden pins the on-disk format: SelfTest's parity checksum, and
// the same parity from the portable code path (no SIMD), so that a CPU
// feature or a library upgrade cannot change what parity means.
func TestCodecGolden(t *testing.T) {
	if err := SelfTest(); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, km := range [][2]int{{4, 2}, {2, 1}, {8, 3}, {16, 8}} {
		fast, err := NewCodec(Scheme{Kind: KindRS, K: km[0], M: km[1]})
		if err != nil {
			t.Fatal(err)
		}
		slow, err := reedsolomon.New(km[0], km[1], reedsolomon.WithAVX2(false), reedsolomon.WithSSSE3(false),
			reedsolomon.WithAVX512(false), reedsolomon.WithGFNI(false), reedsolomon.WithAVXGFNI(false), reedsolomon.WithSSE2(false))
		if err != nil {
			t.Fatal(err)
		}
		a, b := shardsOf(rnd, km[0], km[1], 70001), [][]byte(nil)
		for _, s := range a {
			b = append(b, bytes.Clone(s))
		}
		if err := fast.Encode(a); err != nil {
			t.Fatal(err)
		}
		if err := slow.Encode(b); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("rs:%d+%d: shard %d differs between the SIMD and the portable code", km[0], km[1], i)
			}
		}
	}
}

func shardsOf(rnd *rand.Rand, k, m, n int) [][]byte {
	s := make([][]byte, k+m)
	for i := range s {
		s[i] = make([]byte, n)
		if i < k {
			for j := range s[i] {
				s[i][j] = byte(rnd.Uint32())
			}
		}
	}
	return s
}

// TestCodecReconstruct loses every subset of at most M shards of random
// rows and rebuilds the data shards from the rest.
func TestCodecReconstruct(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, km := range [][2]int{{1, 1}, {2, 1}, {4, 2}, {3, 3}, {6, 3}} {
		k, m := km[0], km[1]
		c, err := NewCodec(Scheme{Kind: KindRS, K: k, M: m})
		if err != nil {
			t.Fatal(err)
		}
		orig := shardsOf(rnd, k, m, 1+rnd.IntN(5000))
		if err := c.Encode(orig); err != nil {
			t.Fatal(err)
		}
		n := len(orig[0])
		for mask := 0; mask < 1<<(k+m); mask++ {
			lost := 0
			for i := 0; i < k+m; i++ {
				lost += mask >> i & 1
			}
			if lost > m {
				continue
			}
			sh := make([][]byte, k+m)
			want := make([]bool, k)
			for i := range sh {
				if mask>>i&1 == 1 {
					sh[i] = make([]byte, 0, n)
					if i < k {
						want[i] = true
					}
				} else {
					sh[i] = orig[i]
				}
			}
			if err := c.Reconstruct(sh, want); err != nil {
				t.Fatalf("rs:%d+%d lost %b: %v", k, m, mask, err)
			}
			for i := 0; i < k; i++ {
				if !bytes.Equal(sh[i], orig[i]) {
					t.Fatalf("rs:%d+%d lost %b: data shard %d rebuilt wrong", k, m, mask, i)
				}
			}
		}
		// One loss too many is refused.
		sh := make([][]byte, k+m)
		copy(sh, orig)
		for i := 0; i <= m; i++ {
			sh[i] = nil
		}
		all := make([]bool, k)
		all[0] = true
		if err := c.Reconstruct(sh, all); err == nil {
			t.Fatalf("rs:%d+%d rebuilt with %d shards lost", k, m, m+1)
		}
	}
}

func TestCodecLimits(t *testing.T) {
	for _, tc := range []struct {
		s    Scheme
		want string
	}{
		{Scheme{Kind: KindRS, K: 0, M: 2}, "K must be 1 to 16"},
		{Scheme{Kind: KindRS, K: 20, M: 4}, "K must be 1 to 16"},
		{Scheme{Kind: KindRS, K: 4, M: 0}, "M must be 1 to 8"},
		{Scheme{Kind: KindRS, K: 4, M: 9}, "M must be 1 to 8"},
		{Scheme{Kind: KindMirror, N: 2}, "no erasure code"},
	} {
		if _, err := NewCodec(tc.s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCodec(%s) = %v, want ErrInvalid naming %q", tc.s, err, tc.want)
		}
	}
	a, _ := NewCodec(Scheme{Kind: KindRS, K: 4, M: 2})
	b, _ := NewCodec(Scheme{Kind: KindRS, K: 4, M: 2})
	if a != b || a.K() != 4 || a.M() != 2 {
		t.Fatalf("codec not cached or wrong: %p %p", a, b)
	}
	bad := Layout{Width: 3, Unit: 1 << 20, Scheme: Scheme{Kind: KindRS, K: 4, M: 2}}
	if _, err := bad.Codec(); err == nil || !strings.Contains(err.Error(), "width 3 does not match scheme rs:4+2") {
		t.Fatalf("codec of width 3 rs:4+2 = %v", err)
	}
}

// BenchmarkEncode: parity of one stripe row of 1 MiB units.
func BenchmarkEncode(b *testing.B) {
	for _, km := range [][2]int{{4, 2}, {2, 1}, {8, 3}} {
		b.Run(fmt.Sprintf("rs:%d+%d", km[0], km[1]), func(b *testing.B) {
			c, err := NewCodec(Scheme{Kind: KindRS, K: km[0], M: km[1]})
			if err != nil {
				b.Fatal(err)
			}
			sh := shardsOf(rand.New(rand.NewPCG(1, 1)), km[0], km[1], 1<<20)
			b.SetBytes(int64(km[0]) << 20)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Encode(sh); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReconstruct: one lost data unit of a 1 MiB-unit rs:4+2 row.
func BenchmarkReconstruct(b *testing.B) {
	c, _ := NewCodec(Scheme{Kind: KindRS, K: 4, M: 2})
	sh := shardsOf(rand.New(rand.NewPCG(1, 1)), 4, 2, 1<<20)
	if err := c.Encode(sh); err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 1<<20)
	want := []bool{false, true, false, false}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		sh[1] = dst[:0]
		if err := c.Reconstruct(sh, want); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCodecRebuild: every component of an rs:4+2 window, data or parity,
// is rebuilt byte-identical from every choice of K others, and from fewer
// than K the rebuild fails rather than inventing bytes.
func TestCodecRebuild(t *testing.T) {
	c, err := NewCodec(Scheme{Kind: KindRS, K: 4, M: 2})
	if err != nil {
		t.Fatal(err)
	}
	const w = 3000
	rnd := rand.New(rand.NewPCG(7, 9))
	orig := make([][]byte, 6)
	for i := range orig {
		orig[i] = make([]byte, w)
		if i < 4 {
			for j := range orig[i] {
				orig[i][j] = byte(rnd.Uint32())
			}
		}
	}
	if err := c.Encode(orig); err != nil {
		t.Fatal(err)
	}
	for comp := 0; comp < 6; comp++ {
		for skip := 0; skip < 6; skip++ {
			if skip == comp {
				continue
			}
			shards := make([][]byte, 6)
			for i := range shards {
				if i != comp && i != skip {
					shards[i] = bytes.Clone(orig[i])
				}
			}
			p := make([]byte, w)
			if err := c.Rebuild(shards, comp, p); err != nil {
				t.Fatalf("rebuild %d without %d: %v", comp, skip, err)
			}
			if !bytes.Equal(p, orig[comp]) {
				t.Fatalf("component %d rebuilt without %d differs", comp, skip)
			}
			for i := range shards {
				if shards[i] != nil && !bytes.Equal(shards[i], orig[i]) {
					t.Fatalf("rebuild of %d changed source shard %d", comp, i)
				}
			}
		}
	}
	few := make([][]byte, 6)
	few[1], few[2], few[5] = orig[1], orig[2], orig[5]
	if err := c.Rebuild(few, 0, make([]byte, w)); err == nil {
		t.Fatal("rebuild from 3 of rs:4+2 succeeded")
	}
}
