package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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
		AgentArgs: "--drain-rate 20M --epilog-timeout 5s --drain-settle 300ms --scan-interval 100ms --ready-timeout 10s",
		// A requeued job may start again cred_expire+1 s after it ended.
		CredExpire: 10,
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
	t.Run("Requeued", func(t *testing.T) { testRequeued(t, e) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, e) })
	t.Run("PrologFailed", func(t *testing.T) { testPrologFailed(t, e) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, e) })
}

// Six 40 MB checkpoints appear under the drain rule as the job ends (moved
// there, metadata only), so the whole 240 MB is the final drain's: at
// 20 MB/s it cannot fit in the epilog's 5 s. The job completes, its nodes
// stay in service, its output says the drain goes on after the job, the
// agents of two of its nodes restart during that drain, and every
// checkpoint arrives byte for byte; the registry says so and ends after
// it began.
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
	// The agents restart meanwhile (the first node's crashes): the drain
	// after the job, and the others' wait for it, resume.
	for _, n := range []string{"n1", "n2"} {
		if st, err := e.Tier(n, id); err != nil || st.Phase != "after-job" {
			t.Fatalf("%s's tier state after the job: %+v, %v; want it kept (after-job)", n, st, err)
		}
		if err := e.KillAgent(n, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := e.StartAgent(n); err != nil {
			t.Fatal(err)
		}
	}
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

// A job is requeued (scontrol requeue) after its first run drained a
// checkpoint, and runs again: the registry keeps both runs, each with its
// own counts, times and Slurm end state (REQUEUED, then COMPLETED), the
// second created after the first ended.
func testRequeued(t *testing.T, e *tiertest.Env) {
	ready := filepath.Join(outDir(e), "requeue.ready")
	script := writeOut(t, e, "requeue.sh", []byte(`#!/bin/sh
set -e
R=${SLURM_RESTART_COUNT:-0}
mkdir -p $STRATA_TIER_DIR/ckpt
seq $R 30000 > $STRATA_TIER_DIR/ckpt/run-$R
if [ "$R" = 0 ]; then
	`+e.Cluster.Strata+` tier drain --wait --timeout 60s $STRATA_TIER_DIR/ckpt/run-0
	touch `+ready+`
	sleep 300
fi
echo "run $R done"
`), 0o755)
	id := submit(t, e, "-N2", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,drain=ckpt/*:strata:/x/rq", script)
	if err := tiertest.WaitFile(ready, time.Minute); err != nil {
		t.Fatal(err)
	}
	jid := strconv.Itoa(int(id))
	if _, err := e.Run("scontrol", "requeue", jid); err != nil {
		t.Fatal(err)
	}
	// Slurm starts the requeued job again cred_expire (10 s here) later.
	if out := waitJob(t, e, id, "COMPLETED"); !strings.Contains(out, "run 1 done") {
		t.Errorf("job output:\n%s", out)
	}
	b := waitTier(t, e, id, time.Minute, func(b admin.TierBody) bool {
		return b.JobState != "" && len(b.Runs) > 0 && b.Runs[0].JobState != ""
	})
	st, _ := e.Strata("tier", "status", jid)
	t.Logf("strata tier status %d:\n%s", id, st)
	if b.Run != 1 || b.State != "done" || b.JobState != "COMPLETED" || b.DrainedFiles != 1 || len(b.Runs) != 1 {
		t.Errorf("registry, last run: run %d, state %s, job state %s, drained %d, %d earlier runs; want run 1, done, COMPLETED, 1, 1",
			b.Run, b.State, b.JobState, b.DrainedFiles, len(b.Runs))
	}
	if len(b.Runs) > 0 {
		r := b.Runs[0]
		if r.Run != 0 || r.State != "done" || r.JobState != "REQUEUED" || r.DrainedFiles != 1 {
			t.Errorf("registry, first run: run %d, state %s, job state %s, drained %d; want run 0, done, REQUEUED, 1", r.Run, r.State, r.JobState, r.DrainedFiles)
		}
		if r.Created == nil || r.Ended == nil || b.Created == nil || b.Ended == nil ||
			r.Ended.Before(*r.Created) || b.Created.Before(*r.Ended) || b.Ended.Before(*b.Created) {
			t.Errorf("registry times: first run %v to %v, second %v to %v", r.Created, r.Ended, b.Created, b.Ended)
		}
	}
	if !strings.Contains(st, "earlier run 0: done, job state REQUEUED") {
		t.Errorf("strata tier status %d does not show the first run", id)
	}
	for r := 0; r <= 1; r++ {
		if got := globalFile(t, e, fmt.Sprintf("/x/rq/run-%d", r)); string(got) != string(seq(r, 30000)) {
			t.Errorf("/x/rq/run-%d: %d bytes, want %d", r, len(got), len(seq(r, 30000)))
		}
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// A running job is cancelled: the registry says cancelled, as Slurm does.
func testCancelled(t *testing.T, e *tiertest.Env) {
	ready := filepath.Join(outDir(e), "cancel.ready")
	id := submit(t, e, "-N2", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,drain=ckpt/*:strata:/x/cn",
		"--wrap", "touch "+ready+"; sleep 300")
	if err := tiertest.WaitFile(ready, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run("scancel", strconv.Itoa(int(id))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(id); err != nil {
		t.Fatal(err)
	}
	b := waitTier(t, e, id, time.Minute, func(b admin.TierBody) bool { return b.JobState != "" })
	if b.State != "cancelled" || b.JobState != "CANCELLED" || b.Created == nil || b.Ended == nil || b.Ended.Before(*b.Created) {
		t.Errorf("registry: state %s, job state %s, created %v, ended %v; want cancelled, CANCELLED", b.State, b.JobState, b.Created, b.Ended)
	}
	if st, err := e.Strata("tier", "status"); err != nil || !regexp.MustCompile(`(?m)^`+strconv.Itoa(int(id))+` +cancelled .* CANCELLED$`).MatchString(st) {
		t.Errorf("strata tier status: %v\n%s", err, st)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// The prolog fails on the second node only, after its data server came
// up (its ROMIO hints file cannot be written: a node fault, so Slurm
// drains that node and requeues the job held), while the first node's
// prolog succeeded: the registry says failed, with the second node's
// reason, not done.
func testPrologFailed(t *testing.T, e *tiertest.Env) {
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--hold", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G", "--wrap", "true")
	jid := strconv.Itoa(int(id))
	block := filepath.Join(e.Dir, "strata", "hints", "n2", jid+".romio")
	if err := os.MkdirAll(block, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Remove(block)
		_, _ = e.Run("scancel", jid)
		_, _ = e.Run("scontrol", "update", "nodename=n2", "state=resume")
	})
	if _, err := e.Run("scontrol", "release", jid); err != nil {
		t.Fatal(err)
	}
	b := waitTier(t, e, id, time.Minute, func(b admin.TierBody) bool { return b.JobState != "" })
	if b.State != "failed" || !containsAll(b.Errors, "could not be set up on node n2") {
		t.Errorf("registry: state %s, job state %s, errors %q; want failed, with n2's reason", b.State, b.JobState, b.Errors)
	}
	t.Logf("prolog failed on n2: registry state %s, job state %s, errors %q", b.State, b.JobState, b.Errors)
	_ = os.Remove(block)
	if _, err := e.Run("scancel", jid); err != nil {
		t.Fatal(err)
	}
	// Slurm drained n2 for its failed prolog (a node fault): back to
	// service.
	_, _ = e.Run("scontrol", "update", "nodename=n2", "state=resume")
	if _, err := e.Wait(id); err != nil {
		t.Fatal(err)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// ---------- helpers ----------

// waitTier polls the registry until the job's tier is in a final state
// and ok says yes, and returns it.
func waitTier(t *testing.T, e *tiertest.Env, id uint32, d time.Duration, ok func(admin.TierBody) bool) admin.TierBody {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		b, found := tierBodyIfAny(t, e, id)
		switch b.State {
		case "done", "failed", "cancelled":
			if found && ok(b) {
				return b
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tier of job %d not as wanted %v after the job: %+v", id, d, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

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

// tierBodyIfAny is GET /v1/tiers/{job}, and whether the job has a record.
func tierBodyIfAny(t *testing.T, e *tiertest.Env, id uint32) (admin.TierBody, bool) {
	t.Helper()
	var b admin.TierBody
	resp, err := http.Get(e.Admin + "/v1/tiers/" + strconv.Itoa(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return b, false
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /v1/tiers/%d: %s %s", id, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b, true
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
