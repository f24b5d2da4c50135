package nfs_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

func testLog() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startFront starts the NFS front end on a free loopback port over cl,
// with root not squashed (the guest runs as root).
func startFront(t testing.TB, cl *testcluster.Cluster, change func(*nfs.Config)) *nfs.Server {
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
	s, err := nfs.New(cfg, nfs.Deps{Log: testLog(), Client: cl.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var (
	guestOnce sync.Once
	guest     *nfsguest.Guest
	guestErr  error
	guestDir  string
)

// kernelGuest prepares the qemu guest once per test binary; a host
// without qemu or the kernel fails the test (contrib/test-deps.sh installs
// them), it does not skip.
func kernelGuest(t *testing.T) *nfsguest.Guest {
	t.Helper()
	if testing.Short() {
		t.Skip("boots the Linux kernel under qemu: not with -short")
	}
	guestOnce.Do(func() {
		guestDir, guestErr = os.MkdirTemp("", "strata-nfsguest-")
		if guestErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var bin string
		bin, guestErr = nfsguest.BuildProgram(ctx, guestDir, "github.com/strata-hpc/strata/internal/nfsguest/guest")
		if guestErr != nil {
			return
		}
		guest, guestErr = nfsguest.Prepare(guestDir, bin)
	})
	if guestErr != nil {
		t.Fatalf("prepare the kernel guest: %v", guestErr)
	}
	return guest
}

func TestMain(m *testing.M) {
	code := m.Run()
	if guestDir != "" {
		_ = os.RemoveAll(filepath.Clean(guestDir))
	}
	os.Exit(code)
}
