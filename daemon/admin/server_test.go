package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// fakeSource is the admin layer's stand-in for the MDS.
type fakeSource struct {
	mu      sync.Mutex
	resp    *rpc.ClusterResp
	err     error
	metrics string
	block   bool              // Cluster waits for its context to end
	entered chan struct{}     // closed when a blocking Cluster call starts
	ctxs    []context.Context // contexts Cluster was called with
}

func (f *fakeSource) Cluster(ctx context.Context) (*rpc.ClusterResp, error) {
	f.mu.Lock()
	f.ctxs = append(f.ctxs, ctx)
	resp, err, block := f.resp, f.err, f.block
	f.mu.Unlock()
	if block {
		close(f.entered)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return resp, err
}

func (f *fakeSource) WriteMetrics(w io.Writer) error {
	if f.metrics == "" {
		return errors.New("metrics broke")
	}
	_, err := io.WriteString(w, f.metrics)
	return err
}

var seen = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func leaderState() *rpc.ClusterResp {
	return &rpc.ClusterResp{
		ID: "mds1", Role: "leader", Term: 3, Leader: "127.0.0.1:7100", Applied: 42,
		Inodes: 7, Default: "width=1,unit=1M,scheme=none", StartedAt: seen.Add(-time.Hour).UnixNano(),
		DataSvrs: []rpc.DSInfo{
			{ID: "ds1", Addr: "127.0.0.1:7201", Node: "n1", Capacity: 1 << 30, Free: 1 << 29, Load: 0.25, State: "up", LastSeen: seen.UnixNano()},
			{ID: "ds2", Addr: "127.0.0.1:7202", Node: "n2", Capacity: 1 << 30, Free: 1 << 30, State: "down", LastSeen: seen.UnixNano()},
		},
	}
}

func startServer(t *testing.T, src Source) *Server {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0"}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

type result struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{resp.StatusCode, resp.Header, string(b)}
}

func TestEndpoints(t *testing.T) {
	tests := []struct {
		name        string
		src         *fakeSource
		method      string
		path        string
		status      int
		ctype       string
		allow       string
		contains    []string
		notContains []string
	}{
		{name: "health leader", src: &fakeSource{resp: leaderState()}, method: "GET", path: "/v1/health", status: 200, ctype: jsonType,
			contains: []string{`"status": "ok"`, `"role": "leader"`, `"data_servers_up": 1`, `"data_servers": 2`}},
		{name: "health follower with leader", src: &fakeSource{resp: &rpc.ClusterResp{Role: "follower", Leader: "10.0.0.1:7100"}}, method: "GET", path: "/v1/health", status: 200,
			contains: []string{`"status": "ok"`, `"role": "follower"`}},
		{name: "health candidate", src: &fakeSource{resp: &rpc.ClusterResp{Role: "candidate"}}, method: "GET", path: "/v1/health", status: 503,
			contains: []string{`"status": "unavailable"`, `no leader (this mds is candidate)`}},
		{name: "health mds down", src: &fakeSource{err: fmt.Errorf("cluster: %w", rpc.ErrUnavailable)}, method: "GET", path: "/v1/health", status: 503,
			contains: []string{`"status": "unavailable"`, `"reason": "admin: mds not serving: cluster: rpc: peer unavailable"`}},
		{name: "health any mds error", src: &fakeSource{err: errors.New("disk on fire")}, method: "GET", path: "/v1/health", status: 503,
			contains: []string{`disk on fire`}},
		{name: "health nil state", src: &fakeSource{}, method: "GET", path: "/v1/health", status: 503,
			contains: []string{`no cluster state`}},
		{name: "health HEAD", src: &fakeSource{resp: leaderState()}, method: "HEAD", path: "/v1/health", status: 200, ctype: jsonType},
		{name: "cluster", src: &fakeSource{resp: leaderState()}, method: "GET", path: "/v1/cluster", status: 200, ctype: jsonType,
			contains: []string{`"role": "leader"`, `"term": 3`, `"leader": "127.0.0.1:7100"`, `"applied_index": 42`, `"inodes": 7`,
				`"default_layout": "width=1,unit=1M,scheme=none"`, `"started_at": "2025-03-01T11:00:00Z"`,
				`"id": "ds1"`, `"addr": "127.0.0.1:7201"`, `"node": "n1"`, `"capacity": 1073741824`, `"free": 536870912`,
				`"load": 0.25`, `"state": "up"`, `"state": "down"`, `"last_seen": "2025-03-01T12:00:00Z"`}},
		{name: "cluster no data servers is an empty list", src: &fakeSource{resp: &rpc.ClusterResp{Role: "leader"}}, method: "GET", path: "/v1/cluster", status: 200,
			contains: []string{`"data_servers": []`}, notContains: []string{"started_at"}},
		{name: "cluster mds down", src: &fakeSource{err: rpc.ErrUnavailable}, method: "GET", path: "/v1/cluster", status: 503, ctype: jsonType,
			contains: []string{`"error": "rpc: peer unavailable"`}},
		{name: "cluster mds error", src: &fakeSource{err: errors.New("boom")}, method: "GET", path: "/v1/cluster", status: 500,
			contains: []string{`"error": "boom"`}},
		{name: "cluster timeout", src: &fakeSource{err: context.DeadlineExceeded}, method: "GET", path: "/v1/cluster", status: 504},
		{name: "metrics", src: &fakeSource{metrics: "# TYPE strata_up gauge\nstrata_up 1\n"}, method: "GET", path: "/metrics", status: 200, ctype: metricsType,
			contains: []string{"# TYPE strata_up gauge\nstrata_up 1\n"}},
		{name: "metrics failing", src: &fakeSource{}, method: "GET", path: "/metrics", status: 500, ctype: jsonType,
			contains: []string{`"error": "admin: metrics: metrics broke"`}},
		{name: "unknown path", src: &fakeSource{resp: leaderState()}, method: "GET", path: "/v1/nope", status: 404, ctype: jsonType,
			contains: []string{`"error": "admin: not found: /v1/nope"`}},
		{name: "unversioned path", src: &fakeSource{resp: leaderState()}, method: "GET", path: "/health", status: 404},
		{name: "wrong method", src: &fakeSource{resp: leaderState()}, method: "POST", path: "/v1/cluster", status: 405, ctype: jsonType, allow: "GET, HEAD",
			contains: []string{`"error": "admin: method not allowed: POST /v1/cluster"`}},
		{name: "delete metrics", src: &fakeSource{metrics: "x 1\n"}, method: "DELETE", path: "/metrics", status: 405, allow: "GET, HEAD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.src)
			r := do(t, tc.method, "http://"+s.Addr()+tc.path)
			if r.status != tc.status {
				t.Errorf("status %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if tc.ctype != "" && r.header.Get("Content-Type") != tc.ctype {
				t.Errorf("content type %q, want %q", r.header.Get("Content-Type"), tc.ctype)
			}
			if r.header.Get("Allow") != tc.allow {
				t.Errorf("Allow %q, want %q", r.header.Get("Allow"), tc.allow)
			}
			for _, c := range tc.contains {
				if !strings.Contains(r.body, c) {
					t.Errorf("body lacks %s:\n%s", c, r.body)
				}
			}
			for _, c := range tc.notContains {
				if strings.Contains(r.body, c) {
					t.Errorf("body has %s:\n%s", c, r.body)
				}
			}
			if tc.method == "HEAD" && r.body != "" {
				t.Errorf("HEAD answered a body: %q", r.body)
			}
			if tc.ctype == jsonType && tc.method != "HEAD" && !json.Valid([]byte(r.body)) {
				t.Errorf("invalid JSON: %s", r.body)
			}
		})
	}
}

// TestClusterDecodes checks the JSON shape a client decodes.
func TestClusterDecodes(t *testing.T) {
	s := startServer(t, &fakeSource{resp: leaderState()})
	r := do(t, "GET", "http://"+s.Addr()+"/v1/cluster")
	var got clusterBody
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.DataServers) != 2 || got.DataServers[0].LastSeen == nil || !got.DataServers[0].LastSeen.Equal(seen) ||
		got.DataServers[1].State != "down" || got.AppliedIndex != 42 {
		t.Errorf("decoded %+v", got)
	}
}

// TestRequestContext checks each request gets its own context and that it
// ends with the request.
func TestRequestContext(t *testing.T) {
	src := &fakeSource{resp: leaderState()}
	s := startServer(t, src)
	for range 2 {
		do(t, "GET", "http://"+s.Addr()+"/v1/cluster")
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.ctxs) != 2 || src.ctxs[0] == src.ctxs[1] {
		t.Fatalf("contexts %v: want two distinct", src.ctxs)
	}
	for i, ctx := range src.ctxs {
		if ctx.Err() == nil {
			t.Errorf("context %d still live after its request", i)
		}
		if _, ok := ctx.Deadline(); !ok {
			t.Errorf("context %d has no deadline", i)
		}
	}
}

// TestCloseCancelsInflight checks Close ends a request blocked on the
// Source instead of waiting for it.
func TestCloseCancelsInflight(t *testing.T) {
	src := &fakeSource{block: true, entered: make(chan struct{})}
	s, err := New(Config{Listen: "127.0.0.1:0"}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr() + "/v1/cluster")
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	<-src.entered
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := <-got; st != 0 && st != http.StatusServiceUnavailable {
		t.Errorf("in-flight request answered %d, want 503 or a closed connection", st)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(Config{Listen: "nonsense"}, Deps{Source: &fakeSource{}}); err == nil {
		t.Error("bad listen address accepted")
	}
	if _, err := New(DefaultConfig(), Deps{}); err == nil {
		t.Error("missing source accepted")
	}
	if DefaultConfig().Listen != "127.0.0.1:7080" {
		t.Errorf("default listen %q", DefaultConfig().Listen)
	}
}

func TestStartTwiceFails(t *testing.T) {
	s := startServer(t, &fakeSource{resp: leaderState()})
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
}

func TestListenConflict(t *testing.T) {
	a := startServer(t, &fakeSource{})
	b, err := New(Config{Listen: a.Addr()}, Deps{Source: &fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "admin: listen") {
		t.Errorf("Start on a taken port: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}
