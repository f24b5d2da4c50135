package client_test

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestPlusCalls: the plus calls answer with the directory's attributes
// after the change, the ones a getattr then returns; they make and refuse
// what the plain calls do, with the caller's permissions; a create with
// open hands back a file that writes and reads back, and its quota room.
func TestPlusCalls(t *testing.T) {
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	cred := rpc.Cred{Uid: 1234, Gid: 5678}
	d, err := c.MkdirIno(ctx, rpc.RootIno, "d", 0o755, cred)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, dir *rpc.Attr) {
		t.Helper()
		now, err := c.Getattr(ctx, d.Ino)
		if err != nil {
			t.Fatal(err)
		}
		if dir == nil || *dir != *now {
			t.Errorf("%s: directory attributes %+v, a getattr after it %+v", what, dir, now)
		}
	}

	sub, dir, err := c.MkdirInoPlus(ctx, d.Ino, "sub", 0o700, cred)
	if err != nil || !sub.IsDir() || sub.Uid != 1234 || sub.Mode&0o7777 != 0o700 {
		t.Fatalf("MkdirInoPlus: %+v %v", sub, err)
	}
	same("mkdir", dir)
	if dir.Nlink != 3 {
		t.Errorf("mkdir: directory nlink %d, want 3", dir.Nlink)
	}
	if _, _, err := c.MkdirInoPlus(ctx, d.Ino, "sub", 0o700, cred); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("second MkdirInoPlus: %v, want EEXIST", err)
	}

	cr, err := c.CreateInoPlus(ctx, d.Ino, "f", 0o640, cred, true, false)
	if err != nil || !cr.Created || !cr.Attr.IsFile() || cr.File != nil || cr.QuotaKnown {
		t.Fatalf("CreateInoPlus without open: %+v %v", cr, err)
	}
	same("create", cr.Dir)
	if _, err := c.CreateInoPlus(ctx, d.Ino, "f", 0o640, cred, true, false); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("CreateInoPlus excl of an existing file: %v", err)
	}

	// With open: the file comes back open for writing.
	cr, err = c.CreateInoPlus(ctx, d.Ino, "g", 0o600, cred, true, true)
	if err != nil || !cr.Created || cr.File == nil || !cr.QuotaKnown || cr.QuotaEnd != ^uint64(0) {
		t.Fatalf("CreateInoPlus with open: %+v %v", cr, err)
	}
	same("create with open", cr.Dir)
	data := []byte("small file")
	if _, err := cr.File.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := cr.File.Close(); err != nil {
		t.Fatal(err)
	}
	rf, _, err := c.OpenIno(ctx, cr.Attr.Ino, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	n, _ := rf.ReadAt(got, 0)
	if !bytes.Equal(got[:n], data) {
		t.Errorf("read back %q, want %q", got[:n], data)
	}
	_ = rf.Close()
	// An existing file without excl is opened, not made.
	cr, err = c.CreateInoPlus(ctx, d.Ino, "g", 0o600, cred, false, true)
	if err != nil || cr.Created || cr.File == nil || cr.Attr.Size != uint64(len(data)) {
		t.Fatalf("CreateInoPlus of an existing file: %+v %v", cr, err)
	}
	if err := cr.File.Close(); err != nil {
		t.Fatal(err)
	}

	// Another user may not change a directory they may not write.
	other := rpc.WithCred(ctx, rpc.Cred{Uid: 4321, Gid: 4321})
	if _, _, err := c.MkdirInoPlus(other, d.Ino, "x", 0o700, rpc.Cred{Uid: 4321, Gid: 4321}); !errors.Is(err, syscall.EACCES) {
		t.Errorf("mkdir by another user: %v, want EACCES", err)
	}
	if _, err := c.CreateInoPlus(other, d.Ino, "x", 0o600, rpc.Cred{Uid: 4321, Gid: 4321}, true, true); !errors.Is(err, syscall.EACCES) {
		t.Errorf("create by another user: %v, want EACCES", err)
	}
	if _, err := c.UnlinkInoPlus(other, d.Ino, "f"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("unlink by another user: %v, want EACCES", err)
	}
	if _, err := c.RmdirInoPlus(other, d.Ino, "sub"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("rmdir by another user: %v, want EACCES", err)
	}

	dir, err = c.UnlinkInoPlus(ctx, d.Ino, "f")
	if err != nil {
		t.Fatal(err)
	}
	same("unlink", dir)
	if _, err := c.Lookup(ctx, d.Ino, "f"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("lookup after unlink: %v, want ENOENT", err)
	}
	dir, err = c.RmdirInoPlus(ctx, d.Ino, "sub")
	if err != nil {
		t.Fatal(err)
	}
	same("rmdir", dir)
	if dir.Nlink != 2 {
		t.Errorf("rmdir: directory nlink %d, want 2", dir.Nlink)
	}
	if _, err := c.RmdirInoPlus(ctx, d.Ino, "sub"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("second rmdir: %v, want ENOENT", err)
	}
}
