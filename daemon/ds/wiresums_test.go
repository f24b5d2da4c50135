package ds

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestWireSums: a data server stores nothing whose bytes do not match the
// checksums the writer sent (EIO), and every read carries checksums that
// match the bytes it returns — with the block size the wire's (each block
// summed once) and with another one.
func TestWireSums(t *testing.T) {
	for _, blockSize := range []int{rpc.SumBlock, 4096} {
		h := newHarness(t, func(c *Config, _ *Deps) { c.BlockSize = blockSize })
		rnd := rand.New(rand.NewPCG(uint64(blockSize), 3))
		id := rpc.ComponentID{Ino: 5, Gen: 1}
		var m model
		for i := 0; i < 40; i++ {
			off := rnd.IntN(4 * rpc.SumBlock)
			p := randBytes(rnd, rnd.IntN(2*rpc.SumBlock)+1)
			h.mustWrite(id, uint64(off), p)
			m.write(off, p)
			roff, n := rnd.IntN(5*rpc.SumBlock), rnd.IntN(3*rpc.SumBlock)+1
			got := h.mustRead(id, uint64(roff), uint64(n)) // checks the sums
			if d := diff(got, m.read(roff, n)); d != "" {
				t.Fatalf("block size %d: read(%d, %d): %s", blockSize, roff, n, d)
			}
		}

		// A write whose bytes changed on the way, or that lacks sums.
		p := bytes.Repeat([]byte("forged"), 30000)
		for name, sums := range map[string][]byte{
			"a flipped byte": rpc.AppendSums(nil, 1000, append([]byte{p[0] ^ 1}, p[1:]...)),
			"no sums":        nil,
			"short sums":     rpc.AppendSums(nil, 1000, p)[4:],
		} {
			req := rpc.DSReq{Cap: h.rw(id), ID: id, Off: 1000, Sums: sums}
			_, err := h.c.CallData(t.Context(), h.s.Addr(), rpc.DWrite, &req, p, &rpc.DSResp{}, nil)
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("block size %d: write with %s: %v, want EIO", blockSize, name, err)
			}
		}
		if d := diff(h.mustRead(id, 0, uint64(len(m))), m.read(0, len(m))); d != "" {
			t.Fatalf("block size %d: a refused write changed the component: %s", blockSize, d)
		}
	}
}
