package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// fakeTiers is the admin layer's stand-in for the tier registry.
type fakeTiers map[uint32]rpc.TierRecord

func (f fakeTiers) Tiers(context.Context) ([]rpc.TierRecord, error) {
	var out []rpc.TierRecord
	for j := uint32(1); j < 100; j++ {
		if r, ok := f[j]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f fakeTiers) Tier(_ context.Context, job uint32) (*rpc.TierRecord, error) {
	r, ok := f[job]
	if !ok {
		return nil, rpc.Errorf(syscall.ENOENT, fmt.Sprintf("no tier recorded for job %d", job))
	}
	return &r, nil
}

func TestTierEndpoints(t *testing.T) {
	tiers := fakeTiers{7: {
		Job: 7, State: rpc.TierDone, Info: rpc.TierInfo{UID: 1000, Nodes: []string{"n1", "n2"}, Capacity: 1 << 30, Spec: "capacity=1G"},
		Stats: []rpc.TierNodeStats{
			{Node: "n1", StagedBytes: 100, StagedFiles: 1, StageNanos: 1e9, DrainedBytes: 50, DrainedFiles: 2, DrainNanos: 5e8},
			{Node: "n2", StagedBytes: 300, StagedFiles: 3, StageNanos: 2e9},
		},
		Lost: []string{"ckpt/x"},
	}}
	s, err := New(Config{Listen: "127.0.0.1:0"}, Deps{Source: &fakeSource{resp: leaderState()}, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	base := "http://" + s.Addr()

	r := do(t, "GET", base+"/v1/tiers/7")
	var b TierBody
	if r.status != 200 || json.Unmarshal([]byte(r.body), &b) != nil {
		t.Fatalf("GET /v1/tiers/7: %d %s", r.status, r.body)
	}
	if b.StagedBytes != 400 || b.StagedFiles != 4 || b.StageRate != 200 || b.DrainedBytes != 50 || b.DrainRate != 100 ||
		b.State != "done" || len(b.Lost) != 1 || b.Lost[0] != "ckpt/x" || len(b.PerNode) != 2 {
		t.Errorf("GET /v1/tiers/7: %+v", b)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/tiers", 200, `"job": 7`},
		{"/v1/tiers/8", 404, "no tier recorded for job 8"},
		{"/v1/tiers/x", 400, `job id \"x\" is not a number`},
		{"/v1/tiers/7/more", 404, "not found"},
	} {
		r := do(t, "GET", base+tc.path)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s: %d %s, want %d with %q", tc.path, r.status, r.body, tc.status, tc.want)
		}
	}
	// Without a registry the endpoints are not there.
	plain := startServer(t, &fakeSource{resp: leaderState()})
	if r := do(t, "GET", "http://"+plain.Addr()+"/v1/tiers"); r.status != 404 {
		t.Errorf("GET /v1/tiers without a registry: %d", r.status)
	}
}
