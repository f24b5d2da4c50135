package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startLimited serves mux with cfg; stream has it stream request bodies.
// Its log goes to logs.
func startLimited(t *testing.T, mux *Mux, cfg ServerConfig, stream bool, logs io.Writer) (*Server, string) {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	s, err := NewServer(mux, slog.New(slog.NewTextHandler(logs, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if stream {
		s.StreamBodies()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
	return s, ln.Addr().String()
}

// rawCall sends a request's headers declaring length body bytes, then
// body (possibly much less), and reads the reply, failing the test if none
// comes within a minute.
func rawCall(t *testing.T, addr, method string, length int, body []byte) (int, *Error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /rpc/%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", method, length)
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: no reply: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	re := &Error{}
	if _, err := splitFrame(b, re); err != nil {
		t.Fatalf("%s: status %d, body %q is not a wire error: %v", method, resp.StatusCode, b, err)
	}
	return resp.StatusCode, re
}

// TestBodyLimits: a call declaring a body over its method's limit is
// refused at once, from its headers, with E2BIG and a message naming the
// limit, whether or not the server streams bodies; a data call's limit is
// the larger one; a call within its limit is served.
func TestBodyLimits(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			mux := NewMux()
			var served atomic.Int64
			Handle(mux, "meta", func(_ context.Context, r *EntryReq) (*EntryReq, error) { served.Add(1); return r, nil })
			HandleData(mux, "data", func(_ context.Context, r *DSReq, in []byte, _ *Data) (*DSResp, error) {
				served.Add(1)
				return &DSResp{Size: uint64(len(in))}, nil
			})
			_, addr := startLimited(t, mux, ServerConfig{}, stream, nil)
			for _, tc := range []struct {
				method string
				length int
			}{
				{"meta", 75_000_000},
				{"meta", DefaultMaxMetaBody + 1},
				{"data", DefaultMaxDataBody + 1},
				{"data", 1 << 30},
			} {
				// A streaming server reads the first 8 KiB (fasthttp's
				// prefetch) before it looks at a request.
				code, re := rawCall(t, addr, tc.method, tc.length, make([]byte, 8<<10))
				want := fmt.Sprintf("request body of %d bytes exceeds the limit of", tc.length)
				if code != http.StatusRequestEntityTooLarge || re.Errno != uint32(syscall.E2BIG) || !strings.Contains(re.Msg, want) {
					t.Errorf("%s declaring %d bytes: status %d, %v %q; want 413, E2BIG, %q", tc.method, tc.length, code, syscall.Errno(re.Errno), re.Msg, want)
				}
			}
			if n := served.Load(); n != 0 {
				t.Errorf("%d refused calls reached their handler", n)
			}
			c := NewClient(ClientConfig{})
			defer c.Close()
			var resp DSResp
			if _, err := c.CallData(context.Background(), addr, "data", &DSReq{}, make([]byte, 2<<20), &resp, nil); err != nil || resp.Size != 2<<20 {
				t.Fatalf("2 MiB data call: %v, size %d", err, resp.Size)
			}
			name := strings.Repeat("n", 200)
			var got EntryReq
			if err := c.Call(context.Background(), addr, "meta", &EntryReq{Name: name}, &got); err != nil || got.Name != name {
				t.Fatalf("meta call: %v", err)
			}
		})
	}
}

// TestGuardBeforeBody: a streamed data call whose guard refuses it (a data
// server's capability check) is answered without its body being read or
// any body memory taken; the handler never runs.
func TestGuardBeforeBody(t *testing.T) {
	mux := NewMux()
	var served atomic.Int64
	HandleData(mux, "write", func(_ context.Context, r *DSReq, in []byte, _ *Data) (*DSResp, error) {
		served.Add(1)
		return &DSResp{}, nil
	})
	Guard(mux, "write", func(r *DSReq) error {
		if r.Off != 42 {
			return Errorf(syscall.EACCES, "no capability")
		}
		return nil
	})
	s, addr := startLimited(t, mux, ServerConfig{}, true, nil)
	hdr := appendFrame(nil, &DSReq{Off: 7})
	// 64 MiB declared, only the header and fasthttp's 8 KiB prefetch sent:
	// the reply must come anyway.
	code, re := rawCall(t, addr, "write", len(hdr)+64<<20, append(hdr, make([]byte, 8<<10)...))
	if code != http.StatusForbidden || re.Errno != uint32(syscall.EACCES) {
		t.Fatalf("status %d, %v %q; want 403 EACCES", code, syscall.Errno(re.Errno), re.Msg)
	}
	if _, peak := s.BodyMemory(); peak != 0 || served.Load() != 0 {
		t.Fatalf("refused call took %d bytes of body memory, %d handler calls", peak, served.Load())
	}
	c := NewClient(ClientConfig{})
	defer c.Close()
	if _, err := c.CallData(context.Background(), addr, "write", &DSReq{Off: 42}, make([]byte, 1<<20), &DSResp{}, nil); err != nil {
		t.Fatalf("allowed call: %v", err)
	}
	if used, peak := s.BodyMemory(); used != 0 || peak < 1<<20 {
		t.Fatalf("after one 1 MiB call: body memory used %d, peak %d", used, peak)
	}
}

// TestBodyMemoryBounded: streamed bodies never hold more than BodyMemory
// at once; a call that cannot get memory within BodyWait is refused with
// EAGAIN, and calls that waited are served once memory is free.
func TestBodyMemoryBounded(t *testing.T) {
	const body = 1 << 20
	mux := NewMux()
	hold := make(chan struct{})
	var inHandler atomic.Int64
	HandleData(mux, "write", func(_ context.Context, r *DSReq, in []byte, _ *Data) (*DSResp, error) {
		inHandler.Add(1)
		if r.Off == 1 {
			<-hold
		}
		return &DSResp{Size: uint64(len(in))}, nil
	})
	cfg := ServerConfig{MaxDataBody: body + MaxFraming, BodyMemory: 2*body + 100, BodyWait: 200 * time.Millisecond}
	s, addr := startLimited(t, mux, cfg, true, nil)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()
	data := make([]byte, body)

	// Two held calls take all the memory; a third is refused after BodyWait.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			_, err := c.CallData(ctx, addr, "write", &DSReq{Off: 1}, data, &DSResp{}, nil)
			errs <- err
		})
	}
	deadline := time.Now().Add(time.Minute)
	for inHandler.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("two calls never reached the handler")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := c.CallData(ctx, addr, "write", &DSReq{}, data, &DSResp{}, nil)
	if !errors.Is(err, syscall.EAGAIN) || !strings.Contains(err.Error(), "server busy") {
		t.Fatalf("call over the memory budget: %v, want EAGAIN server busy", err)
	}
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("held call: %v", err)
		}
	}

	// Many concurrent calls: they wait their turn, all succeed, the budget holds.
	cfg.BodyWait = time.Minute
	s, addr = startLimited(t, mux, cfg, true, nil)
	for range 16 {
		wg.Go(func() {
			var resp DSResp
			if _, err := c.CallData(ctx, addr, "write", &DSReq{}, data, &resp, nil); err != nil || resp.Size != body {
				t.Errorf("concurrent call: %v, size %d", err, resp.Size)
			}
		})
	}
	wg.Wait()
	if used, peak := s.BodyMemory(); used != 0 || peak > cfg.BodyMemory {
		t.Fatalf("body memory used %d, peak %d, budget %d", used, peak, cfg.BodyMemory)
	}
}

// TestConnsPerPeer: one peer address gets at most MaxConnsPerPeer
// connections; the next is refused, and served again once one closes.
func TestConnsPerPeer(t *testing.T) {
	mux := NewMux()
	Handle(mux, "echo", func(_ context.Context, r *EntryReq) (*EntryReq, error) { return r, nil })
	_, addr := startLimited(t, mux, ServerConfig{MaxConnsPerPeer: 3}, false, nil)
	call := func(c net.Conn) (int, error) {
		if err := c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
			return 0, err
		}
		body := appendFrame(nil, &EntryReq{Name: "x"})
		fmt.Fprintf(c, "POST /rpc/echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Body.Close()
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if code, err := call(c); err != nil || code != http.StatusOK {
			t.Fatalf("connection %d: status %d, %v", i, code, err)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if code, err := call(extra); err == nil && code != http.StatusTooManyRequests {
		t.Fatalf("fourth connection served: status %d", code)
	}
	conns[0].Close()
	conns = conns[1:]
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		code, err := call(c)
		c.Close()
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one closed: status %d, %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTimeouts: a connection that sends nothing, or only part of its
// headers, or part of a body, is closed by the server rather than held.
func TestTimeouts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			mux := NewMux()
			HandleData(mux, "data", func(_ context.Context, r *DSReq, in []byte, _ *Data) (*DSResp, error) { return &DSResp{}, nil })
			cfg := ServerConfig{ReadTimeout: 300 * time.Millisecond, DataReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
			_, addr := startLimited(t, mux, cfg, stream, nil)
			hdr := appendFrame(nil, &DSReq{})
			for name, send := range map[string]string{
				"nothing":        "",
				"partial header": "POST /rpc/data HTTP/1.1\r\nHost: x\r\n",
				"partial body":   fmt.Sprintf("POST /rpc/data HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(hdr)+1<<20, hdr),
			} {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(c, send); err != nil {
					t.Fatal(err)
				}
				if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
				_, err = io.Copy(io.Discard, c) // returns once the server closes
				c.Close()
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("%s: connection still open after a minute", name)
				}
			}
		})
	}
}

// TestNoBodyWarning: a streaming server's small calls do not make
// fasthttp read a body stream whole (its "Request.Body() reads the entire
// stream into memory" warning), nor do its large ones.
func TestNoBodyWarning(t *testing.T) {
	mux := NewMux()
	HandleData(mux, "data", func(_ context.Context, r *DSReq, in []byte, _ *Data) (*DSResp, error) {
		return &DSResp{Size: uint64(len(in))}, nil
	})
	Handle(mux, "meta", func(_ context.Context, r *EntryReq) (*EntryReq, error) { return r, nil })
	var logs syncBuf
	_, addr := startLimited(t, mux, ServerConfig{}, true, &logs)
	c := NewClient(ClientConfig{})
	defer c.Close()
	ctx := context.Background()
	for _, n := range []int{0, 10, 4 << 10, streamMin - 1, streamMin, 4 << 20} {
		var resp DSResp
		if _, err := c.CallData(ctx, addr, "data", &DSReq{}, make([]byte, n), &resp, nil); err != nil || resp.Size != uint64(n) {
			t.Fatalf("%d bytes: %v, size %d", n, err, resp.Size)
		}
	}
	if err := c.Call(ctx, addr, "meta", &EntryReq{Name: "a"}, &EntryReq{}); err != nil {
		t.Fatal(err)
	}
	if s := logs.String(); strings.Contains(s, "entire stream") {
		t.Fatalf("server logged fasthttp's whole-body warning:\n%s", s)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBufferedBodyBounded: bodies a server reads whole (the MDS's calls)
// never hold more than BufferedBodyMemory at once: a call that cannot get
// room within BodyWait is refused from its headers with EAGAIN and a
// message saying the server is busy; a connection that dies mid-body gives
// its room back, and calls are served again.
func TestBufferedBodyBounded(t *testing.T) {
	const body = 60 << 10
	mux := NewMux()
	Handle(mux, "set", func(_ context.Context, r *EntryReq) (*EntryReq, error) { return r, nil })
	cfg := ServerConfig{MaxMetaBody: 64 << 10, BufferedBodyMemory: 2*body + 100, BodyWait: 300 * time.Millisecond}
	s, addr := startLimited(t, mux, cfg, false, nil)
	waitUsed := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			used, _ := s.BufferedBodyMemory()
			if used == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("buffered body memory in use: %d, want %d", used, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Two connections send half of a 60 KiB body and stall.
	var holders []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /rpc/set HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", body)
		if _, err := c.Write(make([]byte, body/2)); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, c)
	}
	waitUsed(2 * body)
	code, re := rawCall(t, addr, "set", body, make([]byte, body))
	if code != http.StatusServiceUnavailable || re.Errno != uint32(syscall.EAGAIN) || !strings.Contains(re.Msg, "server busy") {
		t.Fatalf("a third 60 KiB call: status %d, %v %q; want 503, EAGAIN, server busy", code, syscall.Errno(re.Errno), re.Msg)
	}
	holders[0].Close()
	waitUsed(body)
	c := NewClient(ClientConfig{})
	defer c.Close()
	name := strings.Repeat("n", 40<<10)
	var got EntryReq
	if err := c.Call(context.Background(), addr, "set", &EntryReq{Name: name}, &got); err != nil || got.Name != name {
		t.Fatalf("a 40 KiB call once room was given back: %v", err)
	}
	holders[1].Close()
	waitUsed(0)
	if _, peak := s.BufferedBodyMemory(); peak > 2*body+100 {
		t.Fatalf("buffered bodies held %d bytes at once, over the %d budget", peak, 2*body+100)
	}
}
