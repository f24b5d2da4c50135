package rpc

import (
	"errors"
	"hash/crc32"
	"testing"
)

// TestSums: checksums are cut at SumBlock multiples of the component
// offset whatever the pieces, and any flipped byte fails the check.
func TestSums(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli) // the reference, not the package's fast path
	data := make([]byte, 3*SumBlock+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, off := range []uint64{0, 1, SumBlock - 1, SumBlock, 5*SumBlock + 300} {
		for _, n := range []int{0, 1, 100, SumBlock, SumBlock + 1, len(data)} {
			p := data[:n]
			want := []uint32{}
			for x := 0; x < n; {
				k := min(n-x, int(SumBlock-(off+uint64(x))%SumBlock))
				want = append(want, crc32.Checksum(p[x:x+k], castagnoli))
				x += k
			}
			// The same bytes in pieces cut anywhere.
			pieces := [][]byte{p[:n/3], p[n/3 : n/2], {}, p[n/2:]}
			sums := AppendSums(nil, off, pieces...)
			if len(sums) != len(want)*SumSize || SumCount(off, n) != len(want) {
				t.Fatalf("off %d n %d: %d bytes of sums, SumCount %d, want %d sums", off, n, len(sums), SumCount(off, n), len(want))
			}
			for i, w := range want {
				if got := uint32(sums[i*4]) | uint32(sums[i*4+1])<<8 | uint32(sums[i*4+2])<<16 | uint32(sums[i*4+3])<<24; got != w {
					t.Fatalf("off %d n %d: sum %d = %x, want %x", off, n, i, got, w)
				}
			}
			if err := CheckSums(off, sums, p); err != nil {
				t.Fatalf("off %d n %d: %v", off, n, err)
			}
			if n > 0 {
				bad := append([]byte(nil), p...)
				bad[n-1] ^= 0x10
				if err := CheckSums(off, sums, bad); !errors.Is(err, ErrSum) {
					t.Fatalf("off %d n %d: a flipped byte: %v", off, n, err)
				}
				if err := CheckSums(off, sums[:len(sums)-SumSize], p); !errors.Is(err, ErrSum) {
					t.Fatalf("off %d n %d: a missing sum: %v", off, n, err)
				}
			}
		}
	}
}

func BenchmarkAppendSums(b *testing.B) {
	p := make([]byte, 1<<20)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		dst = AppendSums(dst[:0], 0, p)
	}
}
