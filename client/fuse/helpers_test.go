package fuse

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// requireFUSE skips the test, loudly, where there is no /dev/fuse.
func requireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("SKIPPING FUSE TEST: /dev/fuse is missing (%v): NOTHING ABOUT THE MOUNT WAS TESTED HERE", err)
	}
}

// testLog is the mount's log: the test's output with STRATA_TEST_LOG set.
func testLog() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// mountCluster mounts the namespace of cl on a fresh directory and
// unmounts it when the test ends.
func mountCluster(t testing.TB, cl *testcluster.Cluster, opts Options) *Server {
	t.Helper()
	requireFUSE(t)
	dir := t.TempDir()
	if opts.Log == nil {
		opts.Log = testLog()
	}
	opts.Debug = opts.Debug || os.Getenv("STRATA_FUSE_DEBUG") != ""
	s, err := Mount(context.Background(), cl.Client(), dir, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Unmount(ctx, true); err != nil {
			// Detached: something of the test still holds the mount.
			t.Errorf("unmount at the end of the test: %v", err)
		}
	})
	return s
}

// startMount starts a cluster of n data servers and mounts it.
func startMount(t testing.TB, n int, tcOpts ...testcluster.Option) (*testcluster.Cluster, *Server) {
	t.Helper()
	requireFUSE(t)
	cl := testcluster.Start(t, n, tcOpts...)
	return cl, mountCluster(t, cl, DefaultOptions())
}

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }

// deadClient returns a client of an MDS address where nothing listens.
func deadClient(t *testing.T) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.MDS = "127.0.0.1:1"
	cfg.Timeout = time.Second
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
