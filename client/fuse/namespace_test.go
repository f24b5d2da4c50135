package fuse

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestAttributes: what stat(2) and statfs(2) show through the mount is
// what the MDS has: inode numbers, links, sizes and blocks, modes,
// owners and times, set through the mount.
func TestAttributes(t *testing.T) {
	cl := testcluster.Start(t, 2)
	s := mountCluster(t, cl, DefaultOptions())
	c := cl.Client()
	ctx := context.Background()
	p := filepath.Join(s.Dir(), "f")
	data := bytes.Repeat([]byte("z"), 5000)
	if err := os.WriteFile(p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), "d", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	a, err := c.Stat(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ino != a.Ino || st.Size != 5000 || st.Blocks != 10 || st.Nlink != 1 || st.Mode != a.Mode || st.Blksize != 1<<20 {
		t.Errorf("stat: ino %d size %d blocks %d nlink %d mode %o blksize %d; MDS ino %d mode %o",
			st.Ino, st.Size, st.Blocks, st.Nlink, st.Mode, st.Blksize, a.Ino, a.Mode)
	}
	if got := st.Mtim.Nano(); got != a.Mtime {
		t.Errorf("mtime %d, MDS %d", got, a.Mtime)
	}
	var ds unix.Stat_t
	if err := unix.Stat(filepath.Join(s.Dir(), "d"), &ds); err != nil {
		t.Fatal(err)
	}
	if ds.Nlink != 3 {
		t.Errorf("directory with one subdirectory has %d links, want 3", ds.Nlink)
	}

	// chmod, chown, utimes through the mount reach the MDS.
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 1000, 2000); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	a, err = c.Stat(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode&0o7777 != 0o600 || a.Uid != 1000 || a.Gid != 2000 || a.Mtime != mt.UnixNano() || a.Atime != mt.UnixNano() {
		t.Errorf("after chmod/chown/utimes the MDS has %+v", a)
	}

	// truncate(2) by path, without an open file.
	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data[:100]) {
		t.Errorf("after truncate to 100: %d bytes, %v", len(got), err)
	}
	// open with O_TRUNC.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "new" {
		t.Errorf("after O_TRUNC and a write: %q, %v", got, err)
	}

	var sfs unix.Statfs_t
	if err := unix.Statfs(s.Dir(), &sfs); err != nil {
		t.Fatal(err)
	}
	fsst, err := c.StatFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(sfs.Blocks)*uint64(sfs.Frsize) != fsst.Capacity/4096*4096 || sfs.Namelen != 255 {
		t.Errorf("statfs: %d blocks of %d, MDS capacity %d", sfs.Blocks, sfs.Frsize, fsst.Capacity)
	}
}

// TestRenameFlags: renameat2 with RENAME_NOREPLACE and RENAME_EXCHANGE.
func TestRenameFlags(t *testing.T) {
	_, s := startMount(t, 1)
	a, b := filepath.Join(s.Dir(), "a"), filepath.Join(s.Dir(), "b")
	if err := os.WriteFile(a, []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("B"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("RENAME_NOREPLACE onto an existing name: %v, want EEXIST", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE: %v", err)
	}
	ga, _ := os.ReadFile(a)
	gb, _ := os.ReadFile(b)
	if string(ga) != "B" || string(gb) != "A" {
		t.Errorf("after exchange a=%q b=%q", ga, gb)
	}
	c := filepath.Join(s.Dir(), "c")
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE); err != nil {
		t.Fatalf("RENAME_NOREPLACE to a new name: %v", err)
	}
	if got, err := os.ReadFile(c); err != nil || string(got) != "B" {
		t.Errorf("c = %q, %v", got, err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, c, unix.AT_FDCWD, filepath.Join(s.Dir(), "nope"), unix.RENAME_EXCHANGE); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("RENAME_EXCHANGE with a missing target: %v, want ENOENT", err)
	}
}

// TestUnlinkOpen: a file unlinked (or renamed over) while open on the
// mount stays readable and writable until its last close, then is gone.
func TestUnlinkOpen(t *testing.T) {
	cl, s := startMount(t, 2)
	c := cl.Client()
	p := filepath.Join(s.Dir(), "tmp")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("keep me "), 200_000)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat after unlink: %v", err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync after unlink: %v", err)
	}
	got := make([]byte, 2*len(data))
	if n, err := f.ReadAt(got, 0); n != len(got) || !bytes.Equal(got, append(data, data...)) {
		t.Fatalf("read after unlink: %d bytes, %v", n, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
		t.Errorf("fstat after unlink: nlink %d, %v", st.Nlink, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The release that removes the silly name is asynchronous.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, err := c.ReadDir(context.Background(), "/")
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the last close the namespace still has %v", ents)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRmdirAfterClose: rm -rf of a directory right after a program closed
// a file in it works: the kernel releases a closed file after close(2)
// returns, and a file unlinked before its release holds a silly name that
// made the directory not empty (ENOTEMPTY, seen in TestPosix under load).
// Here the file is unlinked while open and closed while rmdir runs.
func TestRmdirAfterClose(t *testing.T) {
	cl, s := startMount(t, 2)
	d := filepath.Join(s.Dir(), "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(d, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("checkpoint"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d, "f")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		closed <- f.Close()
	}()
	if err := os.Remove(d); err != nil {
		t.Errorf("rmdir of a directory whose only file is being closed: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if ents, err := cl.Client().ReadDir(context.Background(), "/"); err != nil || len(ents) != 0 {
		t.Errorf("namespace after rmdir: %v, %v", ents, err)
	}
}
