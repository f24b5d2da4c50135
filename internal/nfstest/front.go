package nfstest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// Log is the daemons' log: the test's stderr with STRATA_TEST_LOG set.
func Log() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// StartFront starts the NFS front end on a free loopback port over cl,
// exporting / to 127.0.0.1 with root not squashed (the guest runs as
// root); change adjusts the config first.
func StartFront(t testing.TB, cl *testcluster.Cluster, change func(*nfs.Config)) *nfs.Server {
	t.Helper()
	cfg := nfs.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	e, err := nfs.ParseExport("/ 127.0.0.1(rw,no_root_squash)")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Exports = []nfs.Export{e}
	cfg.HandleKey = cl.Secret()
	if change != nil {
		change(&cfg)
	}
	s, err := nfs.New(cfg, nfs.Deps{Log: Log(), Client: cl.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// MountFUSE mounts the cluster's namespace with FUSE until the test ends.
func MountFUSE(t testing.TB, cl *testcluster.Cluster) string {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	opts := fuse.DefaultOptions()
	opts.Log = Log()
	s, err := fuse.Mount(context.Background(), cl.Client(), dir, opts)
	if err != nil {
		t.Fatalf("fuse mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Unmount(ctx, true)
	})
	return dir
}

// WriteStrata writes a whole file through the client library.
func WriteStrata(t testing.TB, c *client.Client, name string, data []byte) {
	t.Helper()
	ctx := testcluster.Context(t, time.Minute)
	f, err := c.Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// ReadStrata reads a whole file through the client library.
func ReadStrata(t testing.TB, c *client.Client, name string) []byte {
	t.Helper()
	b, err := TryRead(testcluster.Context(t, time.Minute), c, name)
	if err != nil {
		t.Fatalf("read %s through the client library: %v", name, err)
	}
	return b
}

// TryRead reads a whole file through the client library.
func TryRead(ctx context.Context, c *client.Client, name string) ([]byte, error) {
	f, err := c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
