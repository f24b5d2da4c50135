package nfstest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

var (
	cliOnce sync.Once
	cliDir  string
	cliErr  error
)

// StrataCat returns what `strata cat name` prints for the cluster: the
// strata command, built once per test binary, run as root with the
// cluster's secret (STRATA_SECRET_FILE).
func StrataCat(t testing.TB, cl *testcluster.Cluster, name string) []byte {
	t.Helper()
	cliOnce.Do(func() {
		if cliDir, cliErr = os.MkdirTemp("", "strata-cli-"); cliErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(cliDir, "strata"), "github.com/strata-hpc/strata/cmd/strata").CombinedOutput()
		if err != nil {
			cliErr = &buildError{err: err, out: out}
		}
	})
	if cliErr != nil {
		t.Fatalf("build the strata command: %v", cliErr)
	}
	ctx := testcluster.Context(t, 2*time.Minute)
	cmd := exec.CommandContext(ctx, filepath.Join(cliDir, "strata"), "cat", name)
	cmd.Env = append(os.Environ(), "STRATA_MDS="+cl.MDSAddr(), "STRATA_SECRET_FILE="+filepath.Join(cl.Dir(), "secret"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("strata cat %s: %v: %s", name, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }
