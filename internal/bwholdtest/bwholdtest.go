package bwholdtest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/slurmtest"
)

// GateLua installs contrib/slurm/job_submit.lua with HOLD_FOR_CONTROLLER
// on, as a site running the controller would, for the clusters the test
// starts after it.
func GateLua(t *testing.T) {
	t.Helper()
	root := slurmtest.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "contrib", "slurm", "job_submit.lua"))
	if err != nil {
		t.Fatal(err)
	}
	on := bytes.Replace(b, []byte("local HOLD_FOR_CONTROLLER = false"), []byte("local HOLD_FOR_CONTROLLER = true"), 1)
	if bytes.Equal(on, b) {
		t.Fatal("job_submit.lua has no 'local HOLD_FOR_CONTROLLER = false' line")
	}
	p := filepath.Join(t.TempDir(), "job_submit.lua")
	if err := os.WriteFile(p, on, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRATA_DEVCLUSTER_JOB_SUBMIT", p)
}

// SubmitAsNobody submits a job as an ordinary user: slurmrestd's
// rest_auth/local acts as its own user (nobody), who may hold, release
// and comment on nobody's jobs.
func SubmitAsNobody(t *testing.T, c *slurmtest.Cluster, args ...string) uint32 {
	t.Helper()
	a := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "sbatch", "--parsable"}, args...)
	out, err := c.Run("setpriv", a...)
	if err != nil {
		t.Fatal(err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 32)
	if err != nil {
		t.Fatalf("sbatch printed %q", out)
	}
	return uint32(id)
}

// SqueueLine polls squeue's "STATE REASON COMMENT" of a job until it has
// want in it, for up to a minute.
func SqueueLine(t *testing.T, c *slurmtest.Cluster, id uint32, want string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := c.Run("squeue", "-h", "-j", strconv.FormatUint(uint64(id), 10), "-o", "%T %r %k")
		if err == nil && strings.Contains(out, want) {
			return strings.TrimSpace(out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: squeue shows %q (%v), want %q in it", id, out, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StopREST stops the cluster's slurmrestd (rest_auth/local) by its PID
// file and waits until it is gone.
func StopREST(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "run", "slurmrestd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
