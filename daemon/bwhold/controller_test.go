package bwhold

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/bwholdtest"
	"github.com/strata-hpc/strata/internal/slurmrest"
	"github.com/strata-hpc/strata/internal/slurmtest"
	"github.com/strata-hpc/strata/jobtier"
)

// backlog is the drain demand the test forces (cmd/strata's
// TestQoSControllerOnRealSlurm takes it from a real MDS's bandwidth
// ledger).
type backlog struct{ v atomic.Int64 }

func (b *backlog) DrainDemand(context.Context) (int64, error) { return b.v.Load(), nil }

// TestHoldAndReleaseOnRealSlurm: with the drain backlog forced above the
// capacity, a newly submitted tier job stays pending with the reason in
// the comment its user sees in squeue; it starts by itself once the
// backlog clears, with its own comment back. Then, with slurmrestd
// stopped, the controller changes nothing and logs once a minute.
func TestHoldAndReleaseOnRealSlurm(t *testing.T) {
	bwholdtest.GateLua(t)
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, REST: true, JWT: true, NoSpank: true})
	cl, err := slurmrest.New(slurmrest.Config{Endpoint: "unix:" + filepath.Join(c.Dir, "run", "rest", "slurmrestd.sock"), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var bl backlog
	bl.v.Store(3 * jobtier.LicenseUnit)
	var logBuf syncBuffer
	cfg := DefaultConfig()
	cfg.Capacity, cfg.Interval = 4*jobtier.LicenseUnit, 200*time.Millisecond
	ctl, err := New(cfg, Deps{Slurm: cl, Demand: &bl, Log: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	out := filepath.Join(c.Dir, "out", "bw.out")
	id := bwholdtest.SubmitAsNobody(t, c, "-L", "strata_bw:2", "--comment=my run", "-o", out, "--wrap", "echo drained-job-ran")
	line := bwholdtest.SqueueLine(t, c, id, "waiting for drain bandwidth")
	want := "PENDING JobHeldUser strata-hold: waiting for drain bandwidth: 3 GiB/s in use or owed + 2 GiB/s for this job > 4 GiB/s capacity; comment was: my run"
	if line != want {
		t.Errorf("squeue of the held job:\n got %s\nwant %s", line, want)
	}
	// A job the user holds is not the controller's to release.
	own := bwholdtest.SubmitAsNobody(t, c, "--hold", "-L", "strata_bw:1", "-o", "/dev/null", "--wrap", "true")

	bl.v.Store(1 * jobtier.LicenseUnit) // the backlog clears: 1 + 2 <= 4
	rec, err := c.Wait(id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != "COMPLETED" || rec.Fields["Comment"] != "my" { // scontrol -o splits "my run" at the space
		t.Errorf("released job: state %s comment %q, want COMPLETED with its own comment back", rec.State, rec.Fields["Comment"])
	}
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "drained-job-ran" {
		t.Errorf("job output %q (%v)", b, err)
	}
	if j, err := cl.Job(context.Background(), own); err != nil || !j.Held() || strings.HasPrefix(j.Comment, HoldPrefix) {
		t.Errorf("the user's own held job: %+v %v, want still held, no strata comment", j, err)
	}
	if err := ctl.Close(); err != nil {
		t.Fatal(err)
	}

	// A job the controller would release at once (no backlog), and
	// slurmrestd answering 401 (no token), then stopped: every pass fails,
	// the job stays as it is, and the failure is logged once a minute.
	bl.v.Store(0)
	waiting := bwholdtest.SubmitAsNobody(t, c, "-L", "strata_bw:1", "-o", "/dev/null", "--wrap", "true")
	before := bwholdtest.SqueueLine(t, c, waiting, "waiting for the drain-bandwidth controller")
	url, err := c.RESTURL()
	if err != nil {
		t.Fatal(err)
	}
	noToken, err := slurmrest.New(slurmrest.Config{Endpoint: url, UserName: "root"})
	if err != nil {
		t.Fatal(err)
	}
	defer noToken.Close()
	failingPasses(t, cfg, noToken, &bl, slurmrest.ErrUnauthorized)
	bwholdtest.StopREST(t, c)
	failingPasses(t, cfg, cl, &bl, nil) // connection refused, or no socket
	if after := bwholdtest.SqueueLine(t, c, waiting, "waiting for"); after != before {
		t.Errorf("job %d changed while slurmrestd failed:\n%s\n%s", waiting, before, after)
	}
	if rec, err := c.ShowJob(own); err != nil || rec.Fields["JobState"] != "PENDING" || rec.Fields["Reason"] != "JobHeldUser" {
		t.Errorf("user-held job after failed passes: %v %v", rec.Fields, err)
	}
}

// failingPasses runs 7 passes 10 s apart, all of which must fail (with
// want, if not nil), and checks that they were logged twice: at 0 s and at 60 s.
func failingPasses(t *testing.T, cfg Config, s Slurm, d Demand, want error) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	var log syncBuffer
	ctl, err := New(cfg, Deps{Slurm: s, Demand: d, Log: slog.New(slog.NewTextHandler(&log, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		err := ctl.Step(context.Background())
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("pass %d: %v, want %v", i, err, want)
		}
		ctl.report(err)
		now = now.Add(10 * time.Second)
	}
	if n := strings.Count(log.String(), "pass failed, jobs left untouched"); n != 2 {
		t.Errorf("7 failed passes over 60 s logged %d times, want 2 (at 0 s and 60 s):\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "failures_not_logged=5") {
		t.Errorf("the second line does not count the 5 failures it left out:\n%s", log.String())
	}
	t.Logf("logged:\n%s", log.String())
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
