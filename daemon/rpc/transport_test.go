package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
)

func startServer(t *testing.T, mux *Mux) string {
	t.Helper()
	return startServerWith(t, mux)
}

func startServerWith(t *testing.T, mux *Mux, opts ...func(*Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(mux, slog.New(slog.DiscardHandler), ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

func TestCallAndData(t *testing.T) {
	mux := NewMux()
	Handle(mux, "echo", func(_ context.Context, r *EntryReq) (*EntryReq, error) {
		if r.Name == "missing" {
			return nil, Errorf(syscall.ENOENT, "no such entry")
		}
		return r, nil
	})
	HandleData(mux, "twice", func(_ context.Context, r *DSReq, in []byte, out *Data) (*DSResp, error) {
		p := out.Buffer(2 * len(in))
		copy(p, in)
		copy(p[len(in):], in)
		out.Commit(len(p))
		return &DSResp{Size: uint64(len(p))}, nil
	})
	addr := startServer(t, mux)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()

	var got EntryReq
	if err := c.Call(ctx, addr, "echo", &EntryReq{Parent: 4, Name: "x"}, &got); err != nil || got.Name != "x" || got.Parent != 4 {
		t.Fatalf("echo = %+v, %v", got, err)
	}
	err := c.Call(ctx, addr, "echo", &EntryReq{Name: "missing"}, &got)
	if !errors.Is(err, syscall.ENOENT) || err.Error() != "no such entry" {
		t.Fatalf("remote error = %v, want ENOENT 'no such entry'", err)
	}
	if err := c.Call(ctx, addr, "nope", &Empty{}, &Empty{}); !errors.Is(err, syscall.ENOSYS) {
		t.Fatalf("unknown method = %v, want ENOSYS", err)
	}
	for _, n := range []int{1, 1000, 3 << 20} {
		in := bytes.Repeat([]byte{byte(n)}, n)
		out := make([]byte, 2*n+10)
		var r DSResp
		k, err := c.CallData(ctx, addr, "twice", &DSReq{}, in, &r, out)
		if err != nil || k != 2*n || r.Size != uint64(2*n) || !bytes.Equal(out[:n], in) || !bytes.Equal(out[n:2*n], in) {
			t.Fatalf("twice(%d) = %d, %+v, %v", n, k, r, err)
		}
	}
	if err := c.Call(ctx, "127.0.0.1:1", "echo", &EntryReq{}, &got); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("dead peer = %v, want ErrUnavailable", err)
	}
}

// TestServerRestart: a client's pooled connections to a server that
// restarted (same address) are dead; the next calls must still succeed,
// small ones and ones whose data goes out as a stream (which fasthttp
// does not retry: the client does).
func TestServerRestart(t *testing.T) {
	mux := NewMux()
	Handle(mux, "echo", func(_ context.Context, r *EntryReq) (*EntryReq, error) { return r, nil })
	HandleData(mux, "sum", func(_ context.Context, _ *DSReq, in []byte, _ *Data) (*DSResp, error) {
		s := uint64(0)
		for _, b := range in {
			s += uint64(b)
		}
		return &DSResp{Size: s}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) (*Server, chan error) {
		s, err := NewServer(mux, slog.New(slog.DiscardHandler), ServerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		s.StreamBodies()
		done := make(chan error, 1)
		go func() { done <- s.Serve(ln) }()
		return s, done
	}
	s, done := serve(ln)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()
	big := bytes.Repeat([]byte{3}, 2*streamMin)
	sum := func() error {
		var r DSResp
		if _, err := c.CallData(ctx, addr, "sum", &DSReq{}, big, &r, nil); err != nil {
			return err
		}
		if r.Size != uint64(3*len(big)) {
			return fmt.Errorf("sum of the data %d, want %d", r.Size, 3*len(big))
		}
		return nil
	}
	var got EntryReq
	// Several connections in the pool.
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		go func() { errs <- c.Call(ctx, addr, "echo", &EntryReq{Name: "a"}, &EntryReq{}) }()
		go func() { errs <- sum() }()
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	<-done
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s2, done2 := serve(ln2)
	defer func() { c.Close(); _ = s2.Shutdown(); <-done2 }()
	for i := 0; i < 8; i++ {
		if err := sum(); err != nil {
			t.Fatalf("data call %d after the server restarted: %v", i, err)
		}
		if err := c.Call(ctx, addr, "echo", &EntryReq{Name: "b"}, &got); err != nil || got.Name != "b" {
			t.Fatalf("call %d after the server restarted: %v", i, err)
		}
	}
}

// TestDataBytes: a Client counts the data it sends and receives (small
// and streamed, 1 MiB), not the messages around it.
func TestDataBytes(t *testing.T) {
	mux := NewMux()
	Handle(mux, "echo", func(_ context.Context, r *EntryReq) (*EntryReq, error) { return r, nil })
	HandleData(mux, "twice", func(_ context.Context, r *DSReq, in []byte, out *Data) (*DSResp, error) {
		p := out.Buffer(2 * len(in))
		copy(p, in)
		copy(p[len(in):], in)
		out.Commit(len(p))
		return &DSResp{Size: uint64(len(p))}, nil
	})
	addr := startServer(t, mux)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()
	if err := c.Call(ctx, addr, "echo", &EntryReq{Name: "a name of some length"}, &EntryReq{}); err != nil {
		t.Fatal(err)
	}
	if n := c.DataBytes(); n != 0 {
		t.Fatalf("a call without data counted %d data bytes", n)
	}
	want := uint64(0)
	for _, size := range []int{100, 1 << 20} {
		in := bytes.Repeat([]byte{7}, size)
		out := make([]byte, 2*size)
		n, err := c.CallData(ctx, addr, "twice", &DSReq{}, in, &DSResp{}, out)
		if err != nil || n != 2*size {
			t.Fatalf("twice %d: %d, %v", size, n, err)
		}
		want += uint64(3 * size)
		if got := c.DataBytes(); got != want {
			t.Fatalf("after %d bytes out and %d back: DataBytes %d, want %d", size, 2*size, got, want)
		}
	}
}
