package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/tiertest"
)

// ledgerView is what the test reads of GET /v1/qos.
type ledgerView struct {
	Drains []struct {
		Job     uint32 `json:"job"`
		Backlog uint64 `json:"backlog_bytes"`
		Done    bool   `json:"done"`
	} `json:"drains"`
	Served []struct {
		Class string `json:"class"`
		Job   string `json:"job"`
		Bytes uint64 `json:"served_bytes"`
	} `json:"served"`
}

func getLedger(e *tiertest.Env) (ledgerView, error) {
	var v ledgerView
	resp, err := http.Get(e.Admin + "/v1/qos")
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return v, err
	}
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("GET /v1/qos: %s: %s", resp.Status, b)
	}
	return v, json.Unmarshal(b, &v)
}

// What an admin sees of a real tier's drain in the bandwidth ledger: five
// 40 MB checkpoints drained at 20 MB/s by the job's agent show as the
// job's backlog, which decreases to 0 as they arrive; `strata qos status`
// lists the job meanwhile. The spec's qos=stage puts the drain's traffic
// in class stage at the global data servers, not drain.
func testLedger(t *testing.T, e *tiertest.Env) {
	script := writeOut(t, e, "ledger.sh", []byte(`#!/bin/sh
set -e
T=$STRATA_TIER_DIR
mkdir -p $T/tmp $T/ckpt
for i in 1 2 3 4 5; do head -c 40000000 /dev/urandom > $T/tmp/c$i; done
mv $T/tmp/* $T/ckpt/
`+e.Cluster.Strata+` tier drain --wait --timeout 170s $T/ckpt/c1 $T/ckpt/c2 $T/ckpt/c3 $T/ckpt/c4 $T/ckpt/c5
`), 0o755)
	id := submit(t, e, "-N2", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,qos=stage,drain=ckpt/*:strata:/x/ledger", script)
	// Poll the ledger while the job runs.
	var (
		mu     sync.Mutex
		seen   []uint64 // the job's backlog, each change
		status string   // strata qos status while a backlog was shown
	)
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			v, err := getLedger(e)
			if err != nil {
				continue
			}
			for _, d := range v.Drains {
				if d.Job != id {
					continue
				}
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1] != d.Backlog {
					seen = append(seen, d.Backlog)
				}
				need := d.Backlog > 0 && status == ""
				mu.Unlock()
				if need {
					out, _ := e.Strata("qos", "status")
					mu.Lock()
					status = out
					mu.Unlock()
				}
			}
		}
	}()
	waitJob(t, e, id, "COMPLETED")
	// The final report (backlog 0) follows the epilog's final drain.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(seen)
		last := uint64(1)
		if n > 0 {
			last = seen[n-1]
		}
		mu.Unlock()
		if last == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	<-polled
	t.Logf("job %d: backlog seen %v", id, seen)
	if len(seen) < 3 || seen[len(seen)-1] != 0 {
		t.Fatalf("job %d's backlog in the ledger: %v; want it shown, decreasing, then 0", id, seen)
	}
	peak, decreased := uint64(0), false
	for i, b := range seen {
		peak = max(peak, b)
		decreased = decreased || i > 0 && b > 0 && b < seen[i-1]
	}
	if peak < 80e6 || !decreased {
		t.Errorf("job %d's backlog %v: want at least 2 of the 40 MB checkpoints owed at once, then less, then 0", id, seen)
	}
	row := regexp.MustCompile(`(?m)^` + strconv.Itoa(int(id)) + ` +\d+(\.\d)?M +\d+ +`)
	if !row.MatchString(status) {
		t.Errorf("strata qos status during the drain does not list job %d with its backlog:\n%s", id, status)
	}
	v, err := getLedger(e)
	if err != nil {
		t.Fatal(err)
	}
	byClass := map[string]uint64{}
	for _, s := range v.Served {
		if s.Job == strconv.Itoa(int(id)) {
			byClass[s.Class] += s.Bytes
		}
	}
	// Written and read back (verified) at the global data servers.
	if byClass["stage"] < 2*5*40e6 || byClass["drain"] != 0 {
		t.Errorf("job %d's bytes at the global data servers by class: %v; want the drains' 400 MB in stage (qos=stage), none in drain", id, byClass)
	}
}
