package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/admin"
	"github.com/strata-hpc/strata/internal/tiertest"
)

// TestTierDrain runs the drains that do not fit in the epilog, and what
// users and admins see of drain failures, on a real 3-node Slurm with the
// real SPANK plugin and agents whose drains are slow (20 MB/s) and whose
// epilog gives the final drain 5 s (issue 15). The subtests share the
// cluster and run in order.
func TestTierDrain(t *testing.T) {
	e := tiertest.Start(t, tiertest.Options{
		Nodes:     3,
		SpankArgs: "timeout=100 status_timeout=10",
		AgentArgs: "--drain-rate 20M --epilog-timeout 5s --drain-settle 300ms --scan-interval 100ms",
	})
	ctx := context.Background()
	for _, d := range []struct {
		path string
		mode uint32
	}{{"/x", 0o777}, {"/locked", 0o755}} {
		if err := e.Global.Mkdir(ctx, d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("PastEpilogTimeout", func(t *testing.T) { testPastEpilogTimeout(t, e) })
	t.Run("FailuresReported", func(t *testing.T) { testFailuresReported(t, e) })
}

// Six 40 MB checkpoints appear under the drain rule as the job ends (moved
// there, metadata only), so the whole 240 MB is the final drain's: at
// 20 MB/s it cannot fit in the epilog's 5 s. The job completes, its nodes
// stay in service, its output says the drain goes on after the job, and
// every checkpoint arrives byte for byte; the registry says so and ends
// after it began.
func testPastEpilogTimeout(t *testing.T, e *tiertest.Env) {
	script := writeOut(t, e, "late.sh", []byte(`#!/bin/sh
set -e
T=$STRATA_TIER_DIR
mkdir -p $T/tmp $T/ckpt
for i in 1 2 3 4 5 6; do head -c 40000000 /dev/urandom > $T/tmp/c$i; done
(cd $T/tmp && sha256sum c1 c2 c3 c4 c5 c6)
mv $T/tmp/* $T/ckpt/
`), 0o755)
	id := submit(t, e, "-N3", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,drain=ckpt/*:strata:/x/late", script)
	out := waitJob(t, e, id, "COMPLETED")
	// The job left the queue: its epilogs are done and its nodes are back
	// in service while the drain goes on.
	checkIdle(t, e)
	b := waitTierFinal(t, e, id, 3*time.Minute)
	sums := regexp.MustCompile(`(?m)^([0-9a-f]{64})  (c[1-6])$`).FindAllStringSubmatch(out, -1)
	if len(sums) != 6 {
		t.Fatalf("job output lacks the 6 checksums:\n%s", out)
	}
	for _, m := range sums {
		if got := globalSum(t, e, "/x/late/"+m[2]); got != m[1] {
			t.Errorf("/x/late/%s: sha256 %s, the job wrote %s", m[2], got, m[1])
		}
	}
	if b.State != "done" || b.DrainedFiles != 6 || b.DrainedBytes != 6*40000000 || len(b.Lost) != 0 {
		t.Errorf("registry: state %s, drained %d files (%d bytes), lost %v, errors %q; want done, 6 files, nothing lost",
			b.State, b.DrainedFiles, b.DrainedBytes, b.Lost, b.Errors)
	}
	if b.Created == nil || b.Ended == nil || b.Ended.Before(*b.Created) {
		t.Errorf("registry: created %v, ended %v", b.Created, b.Ended)
	}
	out = jobOutput(t, e, id)
	t.Logf("job %d: drained %d files after the job; its output:\n%s", id, b.DrainedFiles, out)
	for _, want := range []string{
		fmt.Sprintf("strata: job %d: the final drain did not finish within the epilog's time limit", id),
		fmt.Sprintf("strata: job %d: drain after the job done: 6 files drained", id),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job output lacks %q:\n%s", want, out)
		}
	}
	checkGone(t, e, id, []string{"n1", "n2", "n3"})
}

// Two drains the destination refuses (root's /locked, the job runs as
// nobody) and one that works: `strata tier drain --wait` in the job goes
// past the first failure and reports both; the job's output file gets a
// line per failed drain from the epilog; strata tier status lists them as
// errors and lost files. The nodes stay in service.
func testFailuresReported(t *testing.T, e *tiertest.Env) {
	script := writeOut(t, e, "refused.sh", []byte(`#!/bin/sh
T=$STRATA_TIER_DIR
mkdir -p $T/ckpt $T/logs
echo good > $T/ckpt/a
echo b > $T/logs/b
echo c > $T/logs/c
`+e.Cluster.Strata+` tier drain --wait --timeout 60s $T/logs/b $T/ckpt/a $T/logs/c
echo "tier-drain-exit=$?"
`), 0o755)
	id := submit(t, e, "-N2", "--uid="+nobody, "--gid="+nobody,
		"--storage-tier=capacity=1G,drain=ckpt/*:strata:/x/fr,drain=logs/*:strata:/locked/fr", script)
	waitJob(t, e, id, "COMPLETED")
	checkIdle(t, e)
	b := waitTierFinal(t, e, id, time.Minute)
	out := jobOutput(t, e, id)
	t.Logf("job %d output:\n%s", id, out)
	mount := e.MountPath(id)
	for _, want := range []string{
		"strata: tier drain " + mount + "/logs/b: drain logs/b to strata:/locked/fr/b: ",
		mount + "/ckpt/a: drained to strata:/x/fr/a\n",
		"strata: tier drain " + mount + "/logs/c: drain logs/c to strata:/locked/fr/c: ",
		"tier-drain-exit=1\n",
		fmt.Sprintf("strata: job %d: drain logs/b to strata:/locked/fr/b: ", id),
		fmt.Sprintf("strata: job %d: drain logs/c to strata:/locked/fr/c: ", id),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job output lacks %q", want)
		}
	}
	if n := strings.Count(out, "permission denied"); n != 4 {
		t.Errorf("job output says permission denied %d times, want 4 (2 from tier drain, 2 from the epilog)", n)
	}
	if b.State != "done" || b.DrainedFiles != 1 || strings.Join(b.Lost, ",") != "logs/b,logs/c" ||
		!containsAll(b.Errors, "drain logs/b to strata:/locked/fr/b", "permission denied") ||
		!containsAll(b.Errors, "drain logs/c to strata:/locked/fr/c", "permission denied") {
		t.Errorf("registry: state %s, drained %d, lost %v, errors %q", b.State, b.DrainedFiles, b.Lost, b.Errors)
	}
	st, err := e.Strata("tier", "status", strconv.Itoa(int(id)))
	if err != nil || !strings.Contains(st, "lost files  2\n") || !strings.Contains(st, "  lost: logs/b\n") ||
		!strings.Contains(st, "  error: drain logs/c to strata:/locked/fr/c: ") {
		t.Errorf("strata tier status %d: %v\n%s", id, err, st)
	}
}

// ---------- helpers ----------

// waitTierFinal polls the registry until the job's tier is in a final
// state (done, failed, cancelled) and returns it.
func waitTierFinal(t *testing.T, e *tiertest.Env, id uint32, d time.Duration) admin.TierBody {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		b := tierBody(t, e, id)
		switch b.State {
		case "done", "failed", "cancelled":
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("tier of job %d still %s %v after the job: %+v", id, b.State, d, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// globalSum is the sha256 of a global file, hex.
func globalSum(t *testing.T, e *tiertest.Env, name string) string {
	t.Helper()
	f, err := e.Global.Open(context.Background(), name)
	if err != nil {
		t.Errorf("open %s in the global namespace: %v", name, err)
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Errorf("read %s: %v", name, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// jobOutput reads the job's output file as it is now.
func jobOutput(t *testing.T, e *tiertest.Env, id uint32) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(outDir(e), strconv.Itoa(int(id))+".out"))
	if err != nil {
		t.Error(err)
	}
	return string(b)
}
