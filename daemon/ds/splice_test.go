package ds

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestSplicedWrite: large writes of whole blocks into new ranges are
// spliced from the connection into the component's file (no body memory
// taken) and read back byte-identical, on a connection that goes on
// serving; an overwrite in place is written as before; a block changed in
// transit is refused (EIO) and its range reads as the hole it was, before
// and after a restart, never as the bytes sent.
func TestSplicedWrite(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.BlockSize = rpc.SumBlock })
	rnd := rand.New(rand.NewPCG(16, 5))
	id := rpc.ComponentID{Ino: 9, Gen: 1}
	const mib = 1 << 20
	var m model
	// New ranges, out of order (a hole below the end), then an overwrite.
	for i, w := range []struct{ off, n int }{{0, mib}, {3 * mib, 2 * mib}, {mib, mib}, {mib / 2, mib}} {
		if _, peak := h.s.rpc.BodyMemory(); i == 3 && peak != 0 {
			t.Errorf("body memory peak %d bytes: the writes into new ranges were read into memory, not spliced", peak)
		}
		p := randBytes(rnd, w.n)
		h.mustWrite(id, uint64(w.off), p)
		m.write(w.off, p)
	}
	if d := diff(h.mustRead(id, 0, uint64(len(m))), m.read(0, len(m))); d != "" {
		t.Fatalf("read back: %s", d)
	}
	if _, peak := h.s.rpc.BodyMemory(); peak == 0 {
		t.Errorf("body memory peak 0: the overwrite in place was not read into memory")
	}

	// A block changed on the way, in a new range past the end and in the
	// hole at 2 MiB.
	for _, off := range []int{8 * mib, 2 * mib} {
		p := randBytes(rnd, mib)
		sums := rpc.AppendSums(nil, uint64(off), p)
		p[5*rpc.SumBlock+7] ^= 0x40
		req := rpc.DSReq{Cap: h.rw(id), ID: id, Off: uint64(off), Sums: sums}
		_, err := h.c.CallData(t.Context(), h.s.Addr(), rpc.DWrite, &req, p, &rpc.DSResp{}, nil)
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("write at %d with a block changed in transit: %v, want EIO", off, err)
		}
		checkNotStored(t, h, id, off)
	}
	if d := diff(h.mustRead(id, 0, uint64(len(m))), m.read(0, len(m))); d != "" {
		t.Fatalf("after the refused writes: %s", d)
	}
	h.restart()
	checkNotStored(t, h, id, 8*mib)
	if d := diff(h.mustRead(id, 0, uint64(len(m))), m.read(0, len(m))); d != "" {
		t.Fatalf("after a restart: %s", d)
	}
}

// checkNotStored fails unless the MiB at off of id reads as zeros (or not
// at all: past the end), none of it the bytes of a refused write.
func checkNotStored(t *testing.T, h *harness, id rpc.ComponentID, off int) {
	t.Helper()
	got, err := h.read(id, uint64(off), 1<<20)
	if err != nil {
		t.Fatalf("read the refused range at %d: %v", off, err)
	}
	if len(got) > 0 && !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatalf("the refused range at %d reads %d bytes that are not zeros", off, len(got))
	}
}

// TestSplicedWriteCut: a writer whose connection ends in the middle of a
// spliced write's data leaves the range as it was (a hole: zeros), before
// and after a restart, and the data server serves the next writes.
func TestSplicedWriteCut(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.BlockSize = rpc.SumBlock })
	rnd := rand.New(rand.NewPCG(16, 6))
	id := rpc.ComponentID{Ino: 10, Gen: 1}
	const mib = 1 << 20
	first := randBytes(rnd, mib)
	h.mustWrite(id, 0, first)

	p := randBytes(rnd, 2*mib)
	req := rpc.DSReq{Cap: h.rw(id), ID: id, Off: 2 * mib, Sums: rpc.AppendSums(nil, 2*mib, p)}
	frame := rpc.Frame(&req)
	conn, err := net.Dial("tcp", h.s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("POST /rpc/%s HTTP/1.1\r\nHost: ds\r\nContent-Length: %d\r\n\r\n", rpc.DWrite, len(frame)+len(p))
	sent := append(append([]byte(head), frame...), p[:mib+12345]...)
	if _, err := conn.Write(sent); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// Whenever the server meets the cut, the range never reads as data
	// (the read waits for a write in progress: the range lock).
	checkNotStored(t, h, id, 2*mib)
	next := randBytes(rnd, mib)
	h.mustWrite(id, mib, next)
	checkNotStored(t, h, id, 2*mib)
	checkNotStored(t, h, id, 3*mib)
	h.restart()
	checkNotStored(t, h, id, 2*mib)
	checkNotStored(t, h, id, 3*mib)
	if got := h.mustRead(id, 0, 2*mib); !bytes.Equal(got, append(first, next...)) {
		t.Fatalf("the writes around the cut one do not read back")
	}
}
