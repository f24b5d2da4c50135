package client

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestReplyCheck: a reply verified as it lands (replyCheck), told of its
// bytes in steps of any size, passes when every byte matches its
// checksum, and fails with EIO when any one byte of any block (the last,
// partial one too) does not, when the reply is shorter than asked (only
// the bytes that came are checked), or when it carries one checksum too
// many or too few.
func TestReplyCheck(t *testing.T) {
	rnd := rand.New(rand.NewPCG(16, 1))
	for _, off := range []uint64{0, 1000, rpc.SumBlock - 1, 5 * rpc.SumBlock} {
		n := 5*rpc.SumBlock + 777
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rnd.Uint32())
		}
		sums := rpc.AppendSums(nil, off, data)
		// run feeds the bytes to a check in random steps over pieces of odd
		// sizes, got of them, then finishes it with sums.
		run := func(bad int, got int, sums []byte) error {
			buf := append([]byte(nil), data...)
			if bad >= 0 {
				buf[bad] ^= 0x40
			}
			pieces := [][]byte{buf[:n/3], buf[n/3 : n/3], buf[n/3 : n/3+5], buf[n/3+5:]}
			c := replyCheck{off: off, resp: &rpc.DSResp{Sums: sums}, pieces: pieces}
			for k := 0; k < got; {
				k = min(got, k+1+rnd.IntN(3*rpc.SumBlock/2))
				c.landed(k)
			}
			return c.finish(got)
		}
		if err := run(-1, n, sums); err != nil {
			t.Fatalf("off %d: intact reply: %v", off, err)
		}
		for b := 0; b < rpc.SumCount(off, n); b++ {
			// A byte in block b of the reply (its first block starts at off).
			at := int(segStart(off, b) - off)
			bad := min(n-1, at+rnd.IntN(rpc.SumBlock))
			if err := run(bad, n, sums); !errors.Is(err, syscall.EIO) || !errors.Is(err, rpc.ErrSum) {
				t.Fatalf("off %d: reply with byte %d (block %d) changed: %v; want EIO", off, bad, b, err)
			}
		}
		short := n - 1000
		shortSums := rpc.AppendSums(nil, off, data[:short])
		if err := run(short+10, short, shortSums); err != nil {
			t.Fatalf("off %d: short reply (a change past its end): %v", off, err)
		}
		if err := run(short-10, short, shortSums); !errors.Is(err, syscall.EIO) {
			t.Fatalf("off %d: short reply with a byte changed: %v; want EIO", off, err)
		}
		if err := run(-1, n, append(append([]byte(nil), sums...), 0, 0, 0, 0)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("off %d: one checksum too many: %v; want EIO", off, err)
		}
		if err := run(-1, n, sums[:len(sums)-rpc.SumSize]); !errors.Is(err, syscall.EIO) {
			t.Fatalf("off %d: one checksum too few: %v; want EIO", off, err)
		}
	}
}

// segStart is the component offset where block i of a reply at off
// starts (as rpc's).
func segStart(off uint64, i int) uint64 {
	if i == 0 {
		return off
	}
	return (off/rpc.SumBlock + uint64(i)) * rpc.SumBlock
}
