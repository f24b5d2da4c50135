package crc32c

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestUpdate compares Update with hash/crc32 on every length up to 4 KiB
// and around the 64 KiB block, at every alignment of the buffer modulo 64,
// from random starting CRCs.
func TestUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 70<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lens := make([]int, 0, 4200)
	for n := 0; n <= 4096; n++ {
		lens = append(lens, n)
	}
	for _, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1, 64<<10 + 63, 64<<10 + 64, 65 << 10} {
		lens = append(lens, n)
	}
	for _, n := range lens {
		align := n % 64
		p := buf[align : align+n]
		crc := rng.Uint32()
		if got, want := Update(crc, p), crc32.Update(crc, table, p); got != want {
			t.Fatalf("Update(%#x, %d bytes at alignment %d) = %#x, want %#x", crc, n, align, got, want)
		}
	}
	if got, want := Checksum(buf), crc32.Checksum(buf, table); got != want {
		t.Fatalf("Checksum = %#x, want %#x", got, want)
	}
}

// TestUpdatePieces checks that summing a buffer in pieces of any sizes
// gives the CRC of the whole, as the data path does (a block sent in
// several pieces, a block's bytes then its zero tail).
func TestUpdatePieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 256<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	want := crc32.Checksum(buf, table)
	for round := 0; round < 200; round++ {
		var crc uint32
		for p := buf; len(p) > 0; {
			k := min(len(p), 1+rng.IntN(20000))
			crc = Update(crc, p[:k])
			p = p[k:]
		}
		if crc != want {
			t.Fatalf("round %d: pieces summed to %#x, want %#x", round, crc, want)
		}
	}
}

// TestZeros: CRCs of zeros (the checksum of a block's tail, of a hole)
// and of all ones, which exercise the carry-less products' extremes.
func TestZeros(t *testing.T) {
	for _, v := range []byte{0, 0xff} {
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = v
		}
		for _, n := range []int{256, 320, 4096, 64 << 10} {
			for _, crc := range []uint32{0, 0xffffffff, 0x12345678} {
				if got, want := Update(crc, buf[:n]), crc32.Update(crc, table, buf[:n]); got != want {
					t.Fatalf("%d bytes of %#x from %#x: %#x, want %#x", n, v, crc, got, want)
				}
			}
		}
	}
}

// TestConstants derives the folding constants of fold_amd64.s from the
// polynomial.
func TestConstants(t *testing.T) {
	k := func(n int) uint64 {
		v := uint32(1) // x^n mod P, P = x^32 + 0x1EDC6F41
		for i := 0; i < n; i++ {
			top := v & 0x80000000
			v <<= 1
			if top != 0 {
				v ^= 0x1EDC6F41
			}
		}
		return uint64(bits.Reverse32(v)) << 1
	}
	for _, c := range []struct {
		d      int
		lo, hi uint64
	}{{2048, 0xdcb17aa4, 0xb9e02b86}, {512, 0x740eef02, 0x9e4addf8}, {128, 0xf20c0dfe, 0x14cd00bd6}} {
		if lo, hi := k(c.d+32), k(c.d-32); lo != c.lo || hi != c.hi {
			t.Errorf("distance %d: constants %#x %#x, derived %#x %#x", c.d, c.lo, c.hi, lo, hi)
		}
	}
}

// FuzzUpdate: any bytes, any start, any cut give hash/crc32's answer.
func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 300), uint16(7))
	f.Add(uint32(0xdeadbeef), make([]byte, 1024), uint16(512))
	f.Fuzz(func(t *testing.T, crc uint32, p []byte, cut uint16) {
		c := min(int(cut), len(p))
		got := Update(Update(crc, p[:c]), p[c:])
		if want := crc32.Update(crc, table, p); got != want {
			t.Fatalf("Update(%#x, %d bytes cut at %d) = %#x, want %#x", crc, len(p), c, got, want)
		}
	})
}

// BenchmarkUpdate: the rate of Update against hash/crc32's on one 64 KiB
// block (the end-to-end checksum's span).
func BenchmarkUpdate(b *testing.B) {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.Run("crc32c", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			Update(0, buf)
		}
	})
	b.Run("hash/crc32", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			crc32.Update(0, table, buf)
		}
	})
}
