package fuse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCloseToOpen: what one mount wrote and closed, another mount reads
// at its next open, including a file it had read (and cached) before.
func TestCloseToOpen(t *testing.T) {
	cl, a := startMount(t, 4)
	b := mountCluster(t, cl, DefaultOptions())
	pa, pb := filepath.Join(a.Dir(), "f"), filepath.Join(b.Dir(), "f")
	v1 := bytes.Repeat([]byte("one "), 300_000)
	if err := os.WriteFile(pa, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(pb); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("B reads %d bytes, %v; want A's %d", len(got), err, len(v1))
	}
	// B has the pages cached now; A rewrites the file, longer.
	v2 := bytes.Repeat([]byte("two!"), 400_000)
	if err := os.WriteFile(pa, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	// Attributes may be cached for AttrTimeout; open revalidates the data.
	time.Sleep(DefaultOptions().AttrTimeout)
	if got, err := os.ReadFile(pb); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("B reads %d bytes, %v; want A's new %d", len(got), err, len(v2))
	}
	// And the other way round, with the same length (only the mtime tells).
	v3 := bytes.Repeat([]byte("3ee!"), 400_000)
	if err := os.WriteFile(pb, v3, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(DefaultOptions().AttrTimeout)
	if got, err := os.ReadFile(pa); err != nil || !bytes.Equal(got, v3) {
		t.Fatalf("A reads %d bytes, %v; want B's %d", len(got), err, len(v3))
	}
}

// lockT is F_SETLK with a whole-file lock of type typ.
func lockT(f *os.File, typ int16) error {
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0}
	for {
		err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// TestLocksAcrossMounts: fcntl and flock locks taken through one mount
// exclude conflicting locks through another mount of the same namespace,
// and go at unlock and at close.
func TestLocksAcrossMounts(t *testing.T) {
	cl, a := startMount(t, 2)
	b := mountCluster(t, cl, DefaultOptions())
	if err := os.WriteFile(filepath.Join(a.Dir(), "lk"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(m *Server) *os.File {
		f, err := os.OpenFile(filepath.Join(m.Dir(), "lk"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fa, fb := open(a), open(b)
	defer func() { fa.Close(); fb.Close() }()

	t.Run("fcntl", func(t *testing.T) {
		if err := lockT(fa, syscall.F_WRLCK); err != nil {
			t.Fatalf("A: write lock: %v", err)
		}
		if err := lockT(fb, syscall.F_WRLCK); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("B: write lock while A holds one: %v, want EAGAIN", err)
		}
		if err := lockT(fb, syscall.F_RDLCK); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("B: read lock while A holds a write lock: %v, want EAGAIN", err)
		}
		// F_GETLK through B names A's lock.
		lk := syscall.Flock_t{Type: syscall.F_WRLCK}
		if err := syscall.FcntlFlock(fb.Fd(), syscall.F_GETLK, &lk); err != nil || lk.Type != syscall.F_WRLCK {
			t.Fatalf("B: F_GETLK: type %d, %v; want F_WRLCK", lk.Type, err)
		}
		if err := lockT(fa, syscall.F_UNLCK); err != nil {
			t.Fatalf("A: unlock: %v", err)
		}
		if err := lockT(fb, syscall.F_WRLCK); err != nil {
			t.Fatalf("B: write lock after A unlocked: %v", err)
		}
		if err := lockT(fb, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
		// Read locks share.
		if err := lockT(fa, syscall.F_RDLCK); err != nil {
			t.Fatal(err)
		}
		if err := lockT(fb, syscall.F_RDLCK); err != nil {
			t.Fatalf("B: read lock beside A's read lock: %v", err)
		}
		if err := lockT(fb, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("close releases", func(t *testing.T) {
		if err := lockT(fa, syscall.F_WRLCK); err != nil {
			t.Fatal(err)
		}
		if err := lockT(fb, syscall.F_WRLCK); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("B: %v, want EAGAIN", err)
		}
		if err := fa.Close(); err != nil {
			t.Fatal(err)
		}
		if err := lockT(fb, syscall.F_WRLCK); err != nil {
			t.Fatalf("B: write lock after A closed: %v", err)
		}
		if err := lockT(fb, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
		fa = open(a)
	})

	t.Run("F_SETLKW waits", func(t *testing.T) {
		if err := lockT(fa, syscall.F_WRLCK); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			lk := syscall.Flock_t{Type: syscall.F_WRLCK}
			for {
				err := syscall.FcntlFlock(fb.Fd(), syscall.F_SETLKW, &lk)
				if !errors.Is(err, syscall.EINTR) {
					got <- err
					return
				}
			}
		}()
		select {
		case err := <-got:
			t.Fatalf("B: F_SETLKW returned (%v) while A holds the lock", err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := lockT(fa, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("B: F_SETLKW: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("B: F_SETLKW still waiting after A unlocked")
		}
		if err := lockT(fb, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("OFD", func(t *testing.T) {
		ofd := func(f *os.File, typ int16) error {
			lk := unix.Flock_t{Type: typ}
			return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		}
		fa2 := open(a)
		if err := ofd(fa2, unix.F_WRLCK); err != nil {
			t.Fatalf("A: OFD lock: %v", err)
		}
		if err := ofd(fb, unix.F_WRLCK); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("B: OFD lock while A holds one: %v, want EAGAIN", err)
		}
		// The lock belongs to the open file: it goes when that is closed.
		if err := fa2.Close(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := ofd(fb, unix.F_WRLCK)
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
				t.Fatalf("B: OFD lock after A closed: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := ofd(fb, unix.F_UNLCK); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("flock", func(t *testing.T) {
		if err := syscall.Flock(int(fa.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatalf("A: flock: %v", err)
		}
		if err := syscall.Flock(int(fb.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("B: flock while A holds it: %v, want EWOULDBLOCK", err)
		}
		if err := syscall.Flock(int(fa.Fd()), syscall.LOCK_UN); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(fb.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatalf("B: flock after A unlocked: %v", err)
		}
		if err := syscall.Flock(int(fb.Fd()), syscall.LOCK_UN); err != nil {
			t.Fatal(err)
		}
		// flock and fcntl locks do not conflict.
		if err := syscall.Flock(int(fa.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		if err := lockT(fb, syscall.F_WRLCK); err != nil {
			t.Fatalf("B: fcntl lock beside A's flock: %v", err)
		}
		if err := lockT(fb, syscall.F_UNLCK); err != nil {
			t.Fatal(err)
		}
		// The flock goes when A's open file goes.
		if err := fa.Close(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := syscall.Flock(int(fb.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				break
			}
			// RELEASE, which drops a flock, is asynchronous in the kernel.
			if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
				t.Fatalf("B: flock after A closed: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		fa = open(a)
	})
}
