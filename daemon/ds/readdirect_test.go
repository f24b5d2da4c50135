package ds

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// directRead reads n bytes at off as a reader that verifies every block
// (rpc.DSReq.Direct) and returns the bytes and the checksums that came
// with them, unchecked.
func (h *harness) directRead(id rpc.ComponentID, off, n uint64) ([]byte, []byte, error) {
	out := make([]byte, n)
	var resp rpc.DSResp
	req := rpc.DSReq{Cap: h.rw(id), ID: id, Off: off, Len: n, Direct: true}
	k, err := h.c.CallData(context.Background(), h.s.Addr(), rpc.DRead, &req, nil, &resp, out)
	return out[:k], resp.Sums, err
}

// TestDirectRead: a reader that verifies every block itself gets the same
// bytes and checksums from a direct read (whole blocks sent from the
// component's file) as from a read the data server verifies, whatever the
// range: aligned or not, across holes, past the end, into the partial
// last block. A corrupt whole block is sent unverified, and its bytes
// fail the reader's check (the reader then reads without Direct, and gets
// the EIO the server logs); one the range covers in part is verified by
// the server, as before. Every call unpins the component once sent.
func TestDirectRead(t *testing.T) {
	const blk = rpc.SumBlock
	h := newHarness(t, func(c *Config, _ *Deps) { c.BlockSize = blk })
	id := rpc.ComponentID{Ino: 21, Gen: 1}
	rnd := rand.New(rand.NewPCG(3, 4))
	var m model
	for _, w := range []struct{ off, n int }{
		{0, 3 * blk},             // blocks 0-2
		{5 * blk, blk + 1000},    // blocks 5 and part of 6; 3 and 4 are holes
		{6*blk + 1000, blk + 17}, // the rest of 6, part of 7: the partial last block
	} {
		p := randBytes(rnd, w.n)
		h.mustWrite(id, uint64(w.off), p)
		m.write(w.off, p)
	}
	ranges := []struct{ off, n uint64 }{
		{0, 3 * blk}, {0, 8 * blk}, {blk, blk}, {blk + 1, blk}, {100, 10},
		{2 * blk, 4 * blk}, {3 * blk, 2 * blk}, {6 * blk, 2 * blk}, {7 * blk, 100},
		{5*blk - 1, 2}, {uint64(len(m)) - 1, 1}, {uint64(len(m)), blk}, {9 * blk, blk},
	}
	for _, r := range ranges {
		got, sums, err := h.directRead(id, r.off, r.n)
		if err != nil {
			t.Fatalf("direct read(%d, %d): %v", r.off, r.n, err)
		}
		if d := diff(got, m.read(int(r.off), int(r.n))); d != "" {
			t.Fatalf("direct read(%d, %d): %s", r.off, r.n, d)
		}
		if err := rpc.CheckSums(r.off, sums, got); err != nil {
			t.Fatalf("direct read(%d, %d): %v", r.off, r.n, err)
		}
		var resp rpc.DSResp
		verified := make([]byte, r.n)
		k, err := h.c.CallData(context.Background(), h.s.Addr(), rpc.DRead, &rpc.DSReq{Cap: h.rw(id), ID: id, Off: r.off, Len: r.n}, nil, &resp, verified)
		if err != nil || !bytes.Equal(verified[:k], got) || !bytes.Equal(resp.Sums, sums) {
			t.Fatalf("read(%d, %d) = %d bytes, %v: not what the direct read gave", r.off, r.n, k, err)
		}
	}

	flipBit(t, h.s.ComponentPath(id), blk+100)
	got, sums, err := h.directRead(id, 0, 3*blk)
	if err != nil {
		t.Fatalf("direct read of a corrupt whole block: %v (the server was to send it unverified)", err)
	}
	if err := rpc.CheckSums(0, sums, got); !errors.Is(err, rpc.ErrSum) {
		t.Fatalf("the corrupt block's bytes passed their checksums: %v", err)
	}
	if _, err := h.read(id, 0, 3*blk); !errors.Is(err, syscall.EIO) {
		t.Fatalf("verified read of the corrupt block = %v, want EIO", err)
	}
	if _, _, err := h.directRead(id, blk+50, 100); !errors.Is(err, syscall.EIO) {
		t.Fatalf("direct read of part of the corrupt block = %v, want EIO (the server verifies what it copies)", err)
	}

	// Every reply has been sent: nothing pins the component any more.
	deadline := time.Now().Add(30 * time.Second)
	for refs(h.s.store, id) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := refs(h.s.store, id); n != 0 {
		t.Fatalf("component pinned %d times after its reads were answered", n)
	}
}

// refs returns how many calls pin component id (0 if it is not open).
func refs(st *store, id rpc.ComponentID) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.open[id]; e != nil {
		return e.refs
	}
	return 0
}

// TestDirectReadHoldsSlot: a direct read's QoS slot is held until its
// reply is sent, not only while it is planned: the send reads the blocks
// from the disk where they are not in the page cache. A reader that does
// not read a reply larger than the sockets hold keeps the slot taken;
// once it reads it, the slot is free again and the bytes are the file's.
func TestDirectReadHoldsSlot(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.BlockSize = rpc.SumBlock })
	id := rpc.ComponentID{Ino: 22, Gen: 1}
	const n = rpc.MaxData // the most one read may ask for
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	for off := 0; off < n; off += 8 << 20 {
		h.mustWrite(id, uint64(off), want[off:off+8<<20])
	}
	inflight := func() int { return h.s.qos.Stats().Inflight }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !ok() {
			t.Fatalf("%s: %d requests in service", what, inflight())
		}
	}

	// The call by hand on a connection with a small receive buffer, which
	// the test does not read from until it has looked: the server's send
	// cannot finish meanwhile, whatever the machine's socket buffer limits.
	conn, err := net.Dial("tcp", h.s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	body := rpc.Frame(&rpc.DSReq{Cap: h.rw(id), ID: id, Len: n, Direct: true})
	if _, err := fmt.Fprintf(conn, "POST /rpc/%s HTTP/1.1\r\nHost: ds\r\nContent-Length: %d\r\n\r\n%s", rpc.DRead, len(body), body); err != nil {
		t.Fatal(err)
	}
	waitFor("a direct read whose reply is being sent", func() bool { return inflight() == 1 })

	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(got) < n {
		t.Fatalf("direct read: status %d, %d bytes, %v", resp.StatusCode, len(got), err)
	}
	if !bytes.Equal(got[len(got)-n:], want) {
		t.Fatal("direct read: the bytes differ from the file's")
	}
	waitFor("a direct read whose reply was sent", func() bool { return inflight() == 0 })
}
