package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// ledgerBody is what the test reads of GET /v1/qos.
type ledgerBody struct {
	Capacity uint64 `json:"capacity_bytes_per_second"`
	Servers  []struct {
		ID      string `json:"id"`
		Measure *struct {
			Capacity uint64 `json:"capacity_bytes_per_second"`
			Served   uint64 `json:"served_bytes_per_second"`
		} `json:"measure"`
	} `json:"servers"`
	Traffic []struct {
		Class string `json:"class"`
		Job   string `json:"job"`
		Use   uint64 `json:"use_bytes_per_second"`
	} `json:"traffic"`
	Drains []struct {
		Job     uint32     `json:"job"`
		Backlog uint64     `json:"backlog_bytes"`
		Rate    uint64     `json:"rate_bytes_per_second"`
		ETA     *time.Time `json:"predicted_done"`
		Done    bool       `json:"done"`
	} `json:"drains"`
}

// TestQoSLedger: what an admin sees of the bandwidth ledger. Data written
// shows as io traffic and gives every data server a measured capacity; a
// tier's drain, reported as its agent reports it, is listed by `strata qos
// status`, GET /v1/qos and /metrics with its backlog, then a drain rate
// and a predicted end, its backlog decreasing to 0, then done.
func TestQoSLedger(t *testing.T) {
	cl := testcluster.Start(t, 2, testcluster.WithAdmin("tok"))
	c := &cli{t: t, mds: cl.MDSAddr(), secret: secretFile(cl)}
	ctx := testcluster.Context(t, 3*time.Minute)
	get := func() ledgerBody {
		t.Helper()
		code, body := httpDo(t, http.MethodGet, "http://"+cl.AdminAddr()+"/v1/qos", "", "")
		var b ledgerBody
		if code != http.StatusOK || json.Unmarshal([]byte(body), &b) != nil {
			t.Fatalf("GET /v1/qos: %d %s", code, body)
		}
		return b
	}
	wait := func(what string, ok func(ledgerBody) bool) ledgerBody {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			b := get()
			if ok(b) {
				return b
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /v1/qos never showed %s: %+v", what, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Traffic: 16 MiB written over both data servers.
	tmp := t.TempDir()
	src, _ := randomFile(t, tmp, "data", 16<<20)
	c.ok("cp", src, "/data")
	b := wait("io traffic and a measured capacity at both data servers", func(b ledgerBody) bool {
		io := false
		for _, u := range b.Traffic {
			io = io || u.Class == "io" && u.Job == "" && u.Use > 0
		}
		measured := 0
		for _, s := range b.Servers {
			if s.Measure != nil && s.Measure.Capacity > 0 {
				measured++
			}
		}
		return io && measured == 2 && b.Capacity > 0
	})
	t.Logf("capacity %d B/s", b.Capacity)

	// A drain: 300 MB in 3 files, then 100 MB drained each second.
	gl := cl.Client()
	const job = 4242
	report := func(backlog, files, drained uint64, done bool) {
		t.Helper()
		if err := gl.ReportDrain(ctx, &rpc.QoSDrainReq{Job: job, Node: "n1", Backlog: backlog, Files: files, Drained: drained, Done: done}); err != nil {
			t.Fatal(err)
		}
	}
	report(300e6, 3, 0, false)
	out := c.ok("qos", "status")
	if !regexp.MustCompile(`(?m)^4242 +286M +3 +0 +0/s +unknown +waiting$`).MatchString(out) {
		t.Fatalf("qos status does not list job 4242 with its backlog (286M, 3 files, not started):\n%s", out)
	}
	var seen []uint64
	for i := uint64(1); i <= 3; i++ {
		time.Sleep(time.Second)
		report(300e6-i*100e6, 3-i, i*100e6, false)
		d := get().Drains
		if len(d) != 1 || d[0].Job != job {
			t.Fatalf("drains: %+v, want job %d", d, job)
		}
		seen = append(seen, d[0].Backlog)
		if i == 1 && (d[0].Rate == 0 || d[0].ETA == nil || !d[0].ETA.After(time.Now())) {
			t.Fatalf("after 100 MB drained in a second: rate %d B/s, predicted end %v; want a rate and an end to come", d[0].Rate, d[0].ETA)
		}
		if i == 1 {
			out := c.ok("qos", "status")
			if !regexp.MustCompile(`(?m)^4242 +191M +2 +95M +\d+M/s +\d+s +draining$`).MatchString(out) {
				t.Fatalf("qos status during the drain:\n%s", out)
			}
		}
	}
	if seen[0] != 200e6 || seen[1] != 100e6 || seen[2] != 0 {
		t.Fatalf("backlog seen %v, want 200e6, 100e6, 0", seen)
	}
	_, metrics := httpDo(t, http.MethodGet, "http://"+cl.AdminAddr()+"/metrics", "", "")
	for _, want := range []string{
		`strata_qos_drain_backlog_bytes\{job="4242"\} 0\n`,
		`strata_qos_capacity_bytes_per_second\{ds="ds\d"\} [1-9]`,
		`strata_qos_use_bytes_per_second\{class="io",job=""\} \d+`,
	} {
		if !regexp.MustCompile(want).MatchString(metrics) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	report(0, 0, 300e6, true)
	if out := c.ok("qos", "status"); !regexp.MustCompile(`(?m)^4242 +0 +0 +286M +.* done$`).MatchString(out) {
		t.Fatalf("qos status after the drain:\n%s", out)
	}
}
