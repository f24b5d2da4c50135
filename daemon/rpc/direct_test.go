package rpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcerts"
)

// TestDirectReply: a data handler's reply made of memory and ranges of a
// file arrives byte for byte, on plain TCP (where the ranges go by
// sendfile: Data.Direct) and over TLS (where they must pass through the
// TLS layer, and Direct is false); bytes past the file's end arrive as
// zeros, not as a short or broken reply; the connection serves the next
// call; and what the handler deferred runs once each reply is sent.
func TestDirectReply(t *testing.T) {
	file := make([]byte, 3<<20+123)
	for i := range file {
		file[i] = byte(i*13 + i>>11)
	}
	path := filepath.Join(t.TempDir(), "component")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// The reply: "head", file [Off, Off+Len) in two adjacent ranges,
	// "tail".
	var released atomic.Int64
	mux := rpc.NewMux()
	rpc.HandleData(mux, "file", func(_ context.Context, r *rpc.DSReq, _ []byte, out *rpc.Data) (*rpc.DSResp, error) {
		copy(out.AppendBytes(4), "head")
		half := int(r.Len / 2)
		out.AppendFile(f, int64(r.Off), half)
		out.AppendFile(f, int64(r.Off)+int64(half), int(r.Len)-half)
		copy(out.AppendBytes(4), "tail")
		out.Defer(func() { released.Add(1) })
		resp := &rpc.DSResp{}
		if out.Direct() {
			resp.Size = 1
		}
		return resp, nil
	})
	rpc.Handle(mux, "ping", func(_ context.Context, r *rpc.EntryReq) (*rpc.EntryReq, error) { return r, nil })

	certs := testcerts.Write(t)
	for _, tc := range []struct {
		name   string
		tls    bool
		direct bool
	}{{"plain", false, true}, {"tls", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			released.Store(0)
			var srvTLS, cliTLS *tls.Config
			if tc.tls {
				if srvTLS, err = certs.Node.ServerConfig(); err != nil {
					t.Fatal(err)
				}
				if cliTLS, err = certs.Node.ClientConfig(); err != nil {
					t.Fatal(err)
				}
			}
			var opts []func(*rpc.Server)
			if srvTLS != nil {
				opts = append(opts, func(s *rpc.Server) { s.UseTLS(srvTLS) })
			}
			addr := rpc.StartServerWith(t, mux, opts...)
			c := rpc.NewClient(rpc.ClientConfig{MaxConnsPerHost: 1, TLS: cliTLS}) // one connection for every call
			defer c.Close()
			ctx := context.Background()
			calls := 0
			for _, r := range []struct{ off, n int }{
				{0, 1 << 20},                // aligned
				{777, 2<<20 + 5},            // unaligned, larger than a socket buffer
				{len(file) - 1000, 1 << 20}, // past the end: zeros
				{5, 10},                     // small
			} {
				want := []byte("head")
				for i := r.off; i < r.off+r.n; i++ {
					b := byte(0)
					if i < len(file) {
						b = file[i]
					}
					want = append(want, b)
				}
				want = append(want, "tail"...)
				got := make([]byte, len(want))
				var resp rpc.DSResp
				n, err := c.CallData(ctx, addr, "file", &rpc.DSReq{Off: uint64(r.off), Len: uint64(r.n)}, nil, &resp, got)
				calls++
				if err != nil || n != len(want) {
					t.Fatalf("file(%d, %d) = %d bytes, %v; want %d", r.off, r.n, n, err, len(want))
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("file(%d, %d): the reply differs from the file's bytes", r.off, r.n)
				}
				if (resp.Size == 1) != tc.direct {
					t.Fatalf("file(%d, %d): Direct() = %v, want %v", r.off, r.n, resp.Size == 1, tc.direct)
				}
				var e rpc.EntryReq
				if err := c.Call(ctx, addr, "ping", &rpc.EntryReq{Name: "after"}, &e); err != nil || e.Name != "after" {
					t.Fatalf("call after a direct reply = %+v, %v", e, err)
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for released.Load() != int64(calls) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := released.Load(); got != int64(calls) {
				t.Fatalf("%d of %d replies released what their handler deferred", got, calls)
			}
		})
	}
}
