package rpc

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestCallReadLanded: CallRead tells its caller, after each read of a
// reply's data, how many bytes of out hold it, and they are the reply's
// bytes: a caller may check them there before the call returns (the
// client library verifies each block as it lands). The counts grow, the
// last is the one CallRead returns, the reply's header is decoded before
// the first; a small reply (held whole) is told once, a failed call never.
func TestCallReadLanded(t *testing.T) {
	mux := NewMux()
	HandleData(mux, "read", func(_ context.Context, r *DSReq, _ []byte, out *Data) (*DSResp, error) {
		if r.Len == 0 {
			return nil, Errorf(syscall.ENOENT, "no such component")
		}
		p := out.Buffer(int(r.Len))
		for i := range p {
			p[i] = byte(i*7 + i>>9)
		}
		out.Commit(len(p))
		return &DSResp{Size: 42}, nil
	})
	addr := startServer(t, mux)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()

	for _, n := range []int{3<<20 + 17, 100} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7 + i>>9)
		}
		buf := make([]byte, n)
		// Pieces of odd sizes, the reply's bytes scattered over them.
		out := [][]byte{buf[:n/3], buf[n/3 : n/3+1], buf[n/3+1:]}
		var resp DSResp
		var counts []int
		landed := func(k int) {
			if resp.Size != 42 {
				t.Errorf("%d-byte reply: told of %d bytes before its header was decoded", n, k)
			}
			if len(counts) > 0 && k <= counts[len(counts)-1] {
				t.Errorf("%d-byte reply: told of %d bytes after %d", n, k, counts[len(counts)-1])
			}
			if k > n || !bytes.Equal(buf[:k], want[:k]) {
				t.Errorf("%d-byte reply: told of %d bytes that are not (all) there", n, k)
			}
			counts = append(counts, k)
		}
		got, err := c.CallRead(ctx, addr, "read", &DSReq{Len: uint64(n)}, &resp, out, landed)
		if err != nil || got != n {
			t.Fatalf("%d-byte reply: CallRead = %d, %v", n, got, err)
		}
		if len(counts) == 0 || counts[len(counts)-1] != n {
			t.Fatalf("%d-byte reply: told %v, the last must be %d", n, counts, n)
		}
		if n < streamMin && len(counts) != 1 {
			t.Fatalf("%d-byte reply (held whole): told %v, want once", n, counts)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("%d-byte reply: the bytes differ", n)
		}
	}

	called := false
	_, err := c.CallRead(ctx, addr, "read", &DSReq{}, &DSResp{}, [][]byte{make([]byte, 1<<20)}, func(int) { called = true })
	if !errors.Is(err, syscall.ENOENT) || called {
		t.Fatalf("failed call: %v, landed called %v; want ENOENT, never called", err, called)
	}
}
