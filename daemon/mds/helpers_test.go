package mds

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

// testSecret is the cluster secret of test servers.
func testSecret() []byte { return bytes.Repeat([]byte{7}, capability.SecretSize) }

// testConfig is a server on loopback with fast raft and heartbeat timeouts.
func testConfig(dir string) Config {
	return Config{
		ID:                "mds1",
		Listen:            "127.0.0.1:0",
		RaftAddr:          "127.0.0.1:0",
		Dir:               dir,
		Secret:            testSecret(),
		DefaultLayout:     "width=4,unit=1M,scheme=none",
		HeartbeatInterval: 100 * time.Millisecond,
		HeartbeatTimeout:  2 * time.Second,
		RaftTimeout:       50 * time.Millisecond,
	}
}

// tmds is a started server and a client for it.
type tmds struct {
	*Server
	t *testing.T
	c *rpc.Client
}

// startMDS starts a server with cfg, waits until it is ready, and closes it
// when the test ends (unless the test closed it).
func startMDS(t *testing.T, cfg Config) *tmds {
	t.Helper()
	s, err := New(cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := &tmds{Server: s, t: t, c: testClient(10 * time.Second)}
	t.Cleanup(func() {
		m.c.Close()
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("mds not ready after 10s")
	}
	return m
}

// testClient returns a client of test servers that calls as a trusted
// node acting for the Cred of each call's context (rpc.WithCred), else for
// root, except heartbeats and scrub reports, which it sends with the
// credential of the data server they name (credCtx).
func testClient(timeout time.Duration) *rpc.Client {
	node := identity.NewNodeCredentials(testSecret(), identity.RoleNode, "testnode", "")
	auth := func(ctx context.Context) (string, error) {
		if cr, ok := rpc.CredFrom(ctx); ok {
			ctx = identity.WithActor(ctx, identity.Actor{Uid: cr.Uid, Gid: cr.Gid})
		}
		return node.Header(ctx)
	}
	return rpc.NewClient(rpc.ClientConfig{Timeout: timeout, Auth: auth})
}

// credCtx returns ctx in which a call of req carries the credential of
// the data server a heartbeat or scrub report names.
func credCtx(ctx context.Context, req any) context.Context {
	id, node := "", ""
	switch r := req.(type) {
	case *rpc.HeartbeatReq:
		id, node = r.ID, r.Node
	case *rpc.ScrubReportReq:
		id = r.DS
	default:
		return ctx
	}
	if node == "" {
		node = id
	}
	h, _ := identity.NewNodeCredentials(testSecret(), identity.RoleDS, node, id).Header(ctx)
	return rpc.WithAuthorization(ctx, h)
}

// call makes one RPC to the server.
func call[Resp any](m *tmds, method string, req any) (*Resp, error) {
	resp := new(Resp)
	if err := m.c.Call(credCtx(context.Background(), req), m.Addr(), method, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// must makes one RPC that must succeed.
func must[Resp any](m *tmds, method string, req any) *Resp {
	m.t.Helper()
	resp, err := call[Resp](m, method, req)
	if err != nil {
		m.t.Fatalf("%s %+v: %v", method, req, err)
	}
	return resp
}

// errnoOf returns the errno of a call's error (0 for nil).
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var re *rpc.Error
	if !errors.As(err, &re) {
		return syscall.EIO
	}
	return re.ErrnoValue()
}

// beat sends one heartbeat for a data server.
func (m *tmds) beat(id, node, addr string) {
	m.t.Helper()
	must[rpc.HeartbeatResp](m, rpc.MHeartbeat, &rpc.HeartbeatReq{ID: id, Node: node, Addr: addr, Capacity: 1 << 40, Free: 1 << 39})
}

// fakeDSes registers n data servers ds1..dsn on distinct nodes and keeps
// them beating until the test ends, so that a slow test on a loaded
// machine never outlives their heartbeat timeout.
func (m *tmds) fakeDSes(n int) {
	m.t.Helper()
	req := func(i int) *rpc.HeartbeatReq {
		id := "ds" + string(rune('0'+i))
		return &rpc.HeartbeatReq{ID: id, Node: "node" + id, Addr: "127.0.0.1:1", Capacity: 1 << 40, Free: 1 << 39}
	}
	for i := 1; i <= n; i++ {
		must[rpc.HeartbeatResp](m, rpc.MHeartbeat, req(i))
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.cfg.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				for i := 1; i <= n; i++ {
					// A failure (the server closed for a restart) is retried at the next tick.
					_, _ = call[rpc.HeartbeatResp](m, rpc.MHeartbeat, req(i))
				}
			}
		}
	}()
	m.t.Cleanup(func() { close(stop); <-done })
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
