package client_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestInodeCalls walks the inode-level calls the FUSE mount uses and
// checks each against the path-level view of the same namespace.
func TestInodeCalls(t *testing.T) {
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	cred := rpc.Cred{Uid: 1234, Gid: 5678}

	d, err := c.MkdirIno(ctx, rpc.RootIno, "d", 0o750, cred)
	if err != nil || !d.IsDir() || d.Uid != 1234 || d.Mode&0o7777 != 0o750 {
		t.Fatalf("MkdirIno: %+v, %v", d, err)
	}
	if _, err := c.MkdirIno(ctx, rpc.RootIno, "d", 0o750, cred); !errors.Is(err, syscall.EEXIST) || rpc.ToErrno(err) != syscall.EEXIST {
		t.Errorf("second MkdirIno: %v, want EEXIST", err)
	}
	f, created, err := c.CreateIno(ctx, d.Ino, "f", 0o640, cred, true)
	if err != nil || !created || !f.IsFile() || f.Gid != 5678 {
		t.Fatalf("CreateIno: %+v %v %v", f, created, err)
	}
	if again, created, err := c.CreateIno(ctx, d.Ino, "f", 0o640, cred, false); err != nil || created || again.Ino != f.Ino {
		t.Errorf("CreateIno of an existing file without excl: %+v %v %v", again, created, err)
	}
	if _, _, err := c.CreateIno(ctx, d.Ino, "f", 0o640, cred, true); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("CreateIno excl of an existing file: %v", err)
	}
	if got, err := c.Lookup(ctx, d.Ino, "f"); err != nil || got.Ino != f.Ino {
		t.Errorf("Lookup: %+v, %v", got, err)
	}
	if _, err := c.Lookup(ctx, d.Ino, "nope"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Lookup of a missing name: %v", err)
	}

	// Data through OpenIno, then the size through Setattr.
	fh, a, err := c.OpenIno(ctx, f.Ino, os.O_RDWR)
	if err != nil || a.Ino != f.Ino {
		t.Fatalf("OpenIno: %+v %v", a, err)
	}
	data := bytes.Repeat([]byte("strata"), 300_000)
	if _, err := fh.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Getattr(ctx, f.Ino); err != nil || got.Size != uint64(len(data)) {
		t.Fatalf("Getattr after close: %+v %v", got, err)
	}
	got, err := c.Setattr(ctx, f.Ino, rpc.SetattrReq{Valid: rpc.SetSize | rpc.SetMode, Size: 1000, Mode: 0o600})
	if err != nil || got.Size != 1000 || got.Mode&0o7777 != 0o600 {
		t.Fatalf("Setattr size+mode: %+v %v", got, err)
	}
	rf, _, err := c.OpenIno(ctx, f.Ino, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	n, err := rf.ReadAt(buf, 0)
	if n != 1000 || !errors.Is(err, io.EOF) || !bytes.Equal(buf[:n], data[:1000]) {
		t.Errorf("read after truncate: %d bytes, %v", n, err)
	}
	if _, err := rf.Refresh(ctx); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	rf.Close()
	if _, _, err := c.OpenIno(ctx, d.Ino, os.O_RDONLY); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("OpenIno of a directory: %v, want EISDIR", err)
	}

	// Links, symlinks, renames, xattrs, listing, removal.
	if l, err := c.LinkIno(ctx, f.Ino, rpc.RootIno, "hard"); err != nil || l.Nlink != 2 {
		t.Errorf("LinkIno: %+v %v", l, err)
	}
	s, err := c.SymlinkIno(ctx, rpc.RootIno, "sym", "d/f", cred)
	if err != nil || !s.IsSymlink() {
		t.Fatalf("SymlinkIno: %+v %v", s, err)
	}
	if target, err := c.ReadlinkIno(ctx, s.Ino); err != nil || target != "d/f" {
		t.Errorf("ReadlinkIno: %q %v", target, err)
	}
	if err := c.RenameIno(ctx, rpc.RootIno, "hard", d.Ino, "f", rpc.RenameNoReplace); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("RenameIno no-replace onto an existing name: %v", err)
	}
	if err := c.RenameIno(ctx, rpc.RootIno, "sym", d.Ino, "f", rpc.RenameExchange); err != nil {
		t.Errorf("RenameIno exchange: %v", err)
	}
	if a, err := c.Lstat(ctx, "/d/f"); err != nil || !a.IsSymlink() {
		t.Errorf("after exchange /d/f is %+v, %v", a, err)
	}
	if err := c.SetXattrIno(ctx, d.Ino, "user.k", []byte("v"), rpc.XattrCreate); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetXattrIno(ctx, d.Ino, "user.k"); err != nil || string(v) != "v" {
		t.Errorf("GetXattrIno: %q %v", v, err)
	}
	if names, err := c.ListXattrIno(ctx, d.Ino); err != nil || len(names) != 1 {
		t.Errorf("ListXattrIno: %q %v", names, err)
	}
	if err := c.RemoveXattrIno(ctx, d.Ino, "user.k"); err != nil {
		t.Error(err)
	}
	if err := c.SetXattrIno(ctx, f.Ino, rpc.LayoutXattr, []byte("width=1"), 0); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("layout of a file with data: %v, want EEXIST", err)
	}
	page, more, err := c.ReadDirPage(ctx, rpc.RootIno, "", 1)
	if err != nil || len(page) != 1 || !more {
		t.Errorf("ReadDirPage limit 1: %v more=%v %v", page, more, err)
	}
	if err := c.UnlinkIno(ctx, d.Ino, "f"); err != nil {
		t.Error(err)
	}
	if err := c.RmdirIno(ctx, rpc.RootIno, "d"); err != nil {
		t.Error(err)
	}
	// After the exchange, the file's links are /sym and /hard.
	if err := c.UnlinkIno(ctx, rpc.RootIno, "sym"); err != nil {
		t.Error(err)
	}
	if a, err := c.Getattr(ctx, f.Ino); err != nil || a.Nlink != 1 {
		t.Errorf("Getattr with one link left: %+v, %v", a, err)
	}
	if err := c.UnlinkIno(ctx, rpc.RootIno, "hard"); err != nil {
		t.Error(err)
	}
	if _, err := c.Getattr(ctx, f.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Getattr after the last link went: %v", err)
	}
}
