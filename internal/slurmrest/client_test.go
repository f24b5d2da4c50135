package slurmrest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/slurmrest"
	"github.com/strata-hpc/strata/internal/slurmtest"
)

// nobody submits as an ordinary user: slurmrestd's rest_auth/local runs
// Slurm's RPCs as its own user (nobody), who may release its own jobs.
var nobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}

func socketClient(t *testing.T, c *slurmtest.Cluster, cfg slurmrest.Config) *slurmrest.Client {
	t.Helper()
	cfg.Endpoint = "unix:" + filepath.Join(c.Dir, "run", "rest", "slurmrestd.sock")
	cl, err := slurmrest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestRealSlurmrestd drives the real slurmrestd of a devcluster over its
// unix socket: what the cluster is, a held job read, commented, released
// and run to completion, and slurm's own error text in errors.
func TestRealSlurmrestd(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{REST: true, NoSpank: true})
	cl := socketClient(t, c, slurmrest.Config{})
	ctx := context.Background()

	if _, err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if _, err := c.WaitNodes("idle"); err != nil {
		t.Fatal(err)
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name+":"+n.State)
	}
	if got := strings.Join(names, " "); got != "n1:idle n2:idle n3:idle n4:idle" {
		t.Errorf("nodes: %s, want n1..n4 idle", got)
	}
	lics, err := cl.Licenses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lics) != 1 || lics[0].Name != "strata_bw" || lics[0].Total != 100 || lics[0].Free != 100 {
		t.Errorf("licenses: %+v, want strata_bw with 100 free of 100", lics)
	}

	out := filepath.Join(c.Dir, "out", "held.out")
	args := append(append([]string{}, nobody[1:]...), "sbatch", "--parsable", "--hold", "-o", out, "--wrap", "echo released-and-ran")
	sb, err := c.Run(nobody[0], args...)
	if err != nil {
		t.Fatal(err)
	}
	id64, err := strconv.ParseUint(strings.TrimSpace(sb), 10, 32)
	if err != nil {
		t.Fatalf("sbatch printed %q", sb)
	}
	id := uint32(id64)
	j, err := cl.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !j.Held() || j.Priority != 0 || j.UserName != "nobody" {
		t.Fatalf("job %d: state %s reason %s priority %d user %s, want a held job of nobody", id, j.State, j.StateReason, j.Priority, j.UserName)
	}
	jobs, err := cl.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Errorf("jobs: %+v, want only job %d", jobs, id)
	}

	if err := cl.SetComment(ctx, id, "strata: held for a test"); err != nil {
		t.Fatal(err)
	}
	if rec, err := c.ShowJob(id); err != nil || !strings.Contains(rec.Fields["Comment"], "strata:") {
		t.Errorf("scontrol show job after SetComment: Comment=%q (%v)", rec.Fields["Comment"], err)
	}
	time.Sleep(1500 * time.Millisecond) // a backfill pass (bf_interval=1) must not start a held job
	if j, err := cl.Job(ctx, id); err != nil || j.State != "PENDING" {
		t.Fatalf("held job: %+v %v, want still PENDING", j, err)
	}
	if err := cl.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Wait(id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != "COMPLETED" {
		t.Fatalf("released job ended %s, want COMPLETED", rec.State)
	}
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "released-and-ran" {
		t.Errorf("job output %q (%v), want released-and-ran", b, err)
	}
	d, err := cl.Diag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.JobsSubmitted < 1 || d.JobsStarted < 1 {
		t.Errorf("diag: %+v, want the job counted as submitted and started", d)
	}

	// slurm's errors: an unknown job, and a job slurmrestd's user may not touch.
	_, err = cl.Job(ctx, 99999)
	var se *slurmrest.Error
	if !errors.Is(err, slurmrest.ErrNoJob) || !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "Unable to find JobId=99999") {
		t.Errorf("job 99999: %v, want HTTP 500 and slurm's 'Unable to find JobId=99999'", err)
	}
	rootJob, err := c.Sbatch("--hold", "--wrap", "true")
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Release(ctx, rootJob)
	if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "Invalid user id") {
		t.Errorf("nobody releasing root's job: %v, want HTTP 500 Invalid user id", err)
	}
	if j, err := cl.Job(ctx, rootJob); err != nil || !j.Held() {
		t.Errorf("root's job after a refused release: %+v %v, want still held", j, err)
	}
}

// TestBoundsOnRealSlurmrestd checks the response bound and the timeout
// against the real slurmrestd: a small bound refuses /nodes, and a
// stopped slurmrestd (SIGSTOP) makes a request fail after the timeout
// rather than hang.
func TestBoundsOnRealSlurmrestd(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, REST: true, NoSpank: true})
	ctx := context.Background()
	small := socketClient(t, c, slurmrest.Config{MaxResponseBytes: 512})
	if _, err := small.Nodes(ctx); !errors.Is(err, slurmrest.ErrTooLarge) {
		t.Errorf("nodes with a 512-byte bound: %v, want ErrTooLarge", err)
	}

	b, err := os.ReadFile(filepath.Join(c.Dir, "run", "slurmrestd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	quick := socketClient(t, c, slurmrest.Config{Timeout: 500 * time.Millisecond})
	start := time.Now()
	_, err = quick.Ping(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "Timeout") {
		t.Errorf("ping of a stopped slurmrestd: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ping of a stopped slurmrestd took %v with a 500ms timeout", d)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if _, err := quick.Ping(ctx); err != nil {
		t.Errorf("ping after SIGCONT: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg slurmrest.Config
		ok  bool
	}{
		{slurmrest.Config{Endpoint: "unix:/run/slurmrestd.sock"}, true},
		{slurmrest.Config{Endpoint: "http://127.0.0.1:6820", UserName: "root", Token: "t"}, true},
		{slurmrest.Config{Endpoint: "unix:relative.sock"}, false},
		{slurmrest.Config{Endpoint: "127.0.0.1:6820"}, false},
		{slurmrest.Config{Endpoint: "http://127.0.0.1:6820", Token: "t"}, false},
		{slurmrest.Config{Endpoint: "unix:/s", Timeout: -1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

// TestJWTOnRealSlurmrestd talks to a rest_auth/jwt slurmrestd over TCP:
// root's token may release and comment on anyone's job (an operator);
// no token is HTTP 401; a bad token reaches slurmctld, which refuses it,
// and slurmrestd 22.05 reports that as HTTP 500 "Unspecified error".
func TestJWTOnRealSlurmrestd(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, REST: true, JWT: true, NoSpank: true})
	url, err := c.RESTURL()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token("root")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cl, err := slurmrest.New(slurmrest.Config{Endpoint: url, UserName: "root", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Ping(ctx); err != nil {
		t.Fatalf("ping with root's token: %v", err)
	}
	id, err := c.Sbatch("--hold", "-o", "/dev/null", "--wrap", "true")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.SetComment(ctx, id, "set-over-jwt"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Wait(id)
	if err != nil || rec.State != "COMPLETED" || rec.Fields["Comment"] != "set-over-jwt" {
		t.Errorf("root's job released over JWT: %s comment %q (%v), want COMPLETED with the comment", rec.State, rec.Fields["Comment"], err)
	}

	none, err := slurmrest.New(slurmrest.Config{Endpoint: url, UserName: "root"})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	_, err = none.Jobs(ctx)
	var se *slurmrest.Error
	if !errors.Is(err, slurmrest.ErrUnauthorized) || !errors.As(err, &se) || se.Status != 401 || !strings.Contains(err.Error(), "Authentication failure") {
		t.Errorf("jobs without a token: %v, want HTTP 401 Authentication failure", err)
	}
	bad, err := slurmrest.New(slurmrest.Config{Endpoint: url, UserName: "root", Token: "not-a-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.Jobs(ctx)
	if !errors.As(err, &se) || se.Status != 500 || !strings.Contains(err.Error(), "Unspecified error") {
		t.Errorf("jobs with a bad token: %v, want HTTP 500 Unspecified error", err)
	}
}
