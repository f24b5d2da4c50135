package nfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

func setlk(f *os.File, typ int16, start, n int64) error {
	lk := syscall.Flock_t{Type: typ, Start: start, Len: n}
	return syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
}

// waitFile polls until path exists.
func waitFile(t *testing.T, path string, guestDone <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-guestDone:
			t.Fatalf("the guest ended before it created %s", path)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKernelLocks: a lock taken by the kernel NFS client and one taken
// through a FUSE mount on the same range conflict, both ways; a kernel
// client that stops renewing its lease (its VM killed) loses its lock.
func TestKernelLocks(t *testing.T) {
	g := nfstest.Guest(t)
	cl := testcluster.Start(t, 2)
	front := nfstest.StartFront(t, cl, func(c *nfs.Config) { c.Lease = 10 * time.Second })
	dir := nfstest.MountFUSE(t, cl)
	lockfile := filepath.Join(dir, "lockfile")
	if err := os.WriteFile(lockfile, make([]byte, 4096), 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(lockfile, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	t.Run("conflict", func(t *testing.T) {
		if err := setlk(f, syscall.F_WRLCK, 0, 100); err != nil {
			t.Fatalf("FUSE lock [0,100): %v", err)
		}
		defer func() { _ = setlk(f, syscall.F_UNLCK, 0, 100) }()
		ctx := testcluster.Context(t, 5*time.Minute)
		var res *nfsguest.Result
		var runErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, runErr = g.Run(ctx, nfsguest.Options{Server: front.Addr(), MountOpt: "vers=4.1", Args: []string{"lock"}})
		}()
		waitFile(t, filepath.Join(dir, "lock-held"), done)
		err := setlk(f, syscall.F_WRLCK, 200, 100)
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			t.Errorf("FUSE lock of [200,300), which the NFS client holds: %v, want EAGAIN", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "lock-held"), []byte("release"), 0o666); err != nil {
			t.Fatal(err)
		}
		<-done
		nfstest.CheckGuest(t, res, runErr)
		if !res.Has("OK conflict-with-fuse-lock") {
			t.Errorf("the guest's lock on the range FUSE holds did not fail")
		}
		if err := setlk(f, syscall.F_WRLCK, 200, 100); err != nil {
			t.Errorf("FUSE lock of [200,300) after the NFS client unlocked: %v", err)
		}
		_ = setlk(f, syscall.F_UNLCK, 200, 100)
	})

	t.Run("lease expiry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			_, _ = g.Run(ctx, nfsguest.Options{Server: front.Addr(), MountOpt: "vers=4.2", Args: []string{"hold"}})
		}()
		defer wg.Wait()
		waitFile(t, filepath.Join(dir, "hold-locked"), done)
		err := setlk(f, syscall.F_WRLCK, 0, 10)
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			t.Fatalf("FUSE lock of [0,10), which the NFS client holds: %v, want EAGAIN", err)
		}
		cancel() // the VM dies: no more SEQUENCE, no unlock
		<-done
		deadline := time.Now().Add(2 * time.Minute)
		for {
			err = setlk(f, syscall.F_WRLCK, 0, 10)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the dead NFS client's lock was never released: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		_ = setlk(f, syscall.F_UNLCK, 0, 10)
	})
}
