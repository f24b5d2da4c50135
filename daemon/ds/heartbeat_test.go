package ds

import (
	"context"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// fakeMDS answers heartbeats, handing every request to a channel.
func fakeMDS(t *testing.T, intervalMs uint32) (string, <-chan rpc.HeartbeatReq) {
	t.Helper()
	beats := make(chan rpc.HeartbeatReq, 100)
	mux := rpc.NewMux()
	rpc.Handle(mux, rpc.MHeartbeat, func(_ context.Context, req *rpc.HeartbeatReq) (*rpc.HeartbeatResp, error) {
		select {
		case beats <- *req:
		default:
		}
		return &rpc.HeartbeatResp{IntervalMs: intervalMs}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.NewServer(mux, slog.New(slog.DiscardHandler), rpc.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String(), beats
}

func nextBeat(t *testing.T, beats <-chan rpc.HeartbeatReq) rpc.HeartbeatReq {
	t.Helper()
	select {
	case b := <-beats:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat within 10s")
	}
	panic("unreachable")
}

func TestHeartbeat(t *testing.T) {
	// The configured interval is an hour: the first beat must go out at
	// Start and the next ones at the MDS's 5 ms.
	mds, beats := fakeMDS(t, 5)
	h := newHarness(t, func(c *Config, _ *Deps) {
		c.MDS = "127.0.0.1:1, " + mds // a dead MDS first: the next address is tried
		c.HeartbeatInterval = time.Hour
		c.Capacity = 1 << 30
	})
	first := nextBeat(t, beats)
	want := rpc.HeartbeatReq{ID: "ds1", Addr: h.s.Addr(), Node: "ds1", Capacity: 1 << 30, Free: first.Free, Load: first.Load}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("heartbeat = %+v, want %+v", first, want)
	}
	if first.Free == 0 || first.Free > 1<<30 {
		t.Fatalf("free = %d", first.Free)
	}
	h.mustWrite(rpc.ComponentID{Ino: 1, Gen: 1}, 0, make([]byte, 1<<20))
	for range 3 {
		nextBeat(t, beats)
	}
	for b := nextBeat(t, beats); b.Free > first.Free-1<<20; b = nextBeat(t, beats) {
	}
}

func TestHeartbeatAdvertise(t *testing.T) {
	mds, beats := fakeMDS(t, 0)
	newHarness(t, func(c *Config, _ *Deps) {
		c.MDS = mds
		c.Advertise = "ds1.example:7201"
		c.Node = "rack1-node4"
	})
	if b := nextBeat(t, beats); b.Addr != "ds1.example:7201" || b.Node != "rack1-node4" {
		t.Fatalf("heartbeat = %+v", b)
	}
}

// TestHeartbeatNoMDS: an unreachable MDS is not fatal, its failures are
// logged once, not once per beat, and Close still returns promptly.
func TestHeartbeatNoMDS(t *testing.T) {
	logs := &recordHandler{}
	d := &beatCountDisk{want: 20, reached: make(chan struct{})}
	h := newHarness(t, func(c *Config, deps *Deps) {
		c.MDS = "127.0.0.1:1"
		c.HeartbeatInterval = time.Millisecond
		deps.Log = slog.New(logs)
		deps.Disk = d
	})
	select {
	case <-d.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("fewer than 20 heartbeats in 10s")
	}
	h.mustWrite(rpc.ComponentID{Ino: 1, Gen: 1}, 0, []byte("still serving"))
	if n := logs.count("heartbeat failed"); n != 1 {
		t.Fatalf("%d heartbeat failures logged, want 1", n)
	}
}

// beatCountDisk closes reached after want Statfs calls (one per beat).
type beatCountDisk struct {
	OSDisk
	mu      sync.Mutex
	n, want int
	reached chan struct{}
}

func (d *beatCountDisk) Statfs(name string) (uint64, uint64, error) {
	d.mu.Lock()
	if d.n++; d.n == d.want {
		close(d.reached)
	}
	d.mu.Unlock()
	return d.OSDisk.Statfs(name)
}

// recordHandler keeps the messages of every log record.
type recordHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

func (h *recordHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

func TestLoad(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &Server{clock: func() time.Time { return now }}
	hb := heartbeater{s: s, lastAt: now}
	now = now.Add(time.Second)
	s.busy.Add(int64(1500 * time.Millisecond)) // 1.5 calls in flight on average
	if got := hb.load(); got != 1.5 {
		t.Fatalf("load = %v, want 1.5", got)
	}
	now = now.Add(time.Second)
	if got := hb.load(); got != 0 {
		t.Fatalf("idle load = %v, want 0", got)
	}
}
