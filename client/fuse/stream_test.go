package fuse

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestStream: on a default mount (a small StreamMin, so that the files
// stay small) a write-only open and the first read-only open of a large
// file bypass the page cache, and the file is cached from its second
// open on; a small file, an O_RDWR open and a reader that opens a file
// another handle has open keep the page cache; a shared mapping of a
// streaming open works; and a reader holding cached pages sees what a
// streaming writer wrote over them. Every read checks the bytes.
func TestStream(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 4)
	opts := DefaultOptions()
	opts.StreamMin = 2 << 20
	s := mountCluster(t, cl, opts)
	if !s.fsys.directMmap.Load() {
		t.Skipf("SKIPPING: the kernel does not grant FUSE_DIRECT_IO_ALLOW_MMAP (Linux < 6.6): no open streams, NOTHING OF IT WAS TESTED")
	}
	p := filepath.Join(s.Dir(), "big")
	const size = 5<<20 + 4321
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	touches := 0
	touch := func() { // the file changes: the next open finds it new
		t.Helper()
		touches++
		mt := time.Unix(1_000_000_000+int64(touches), 0)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// Every file is closed before the mount goes, also when the test
	// fails: a file of the mount still open when this process exits
	// would wait for its flush on the mount that exited with it.
	open := func(flag int) *os.File {
		t.Helper()
		f, err := os.OpenFile(p, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	readCheck := func(f *os.File, what string) {
		t.Helper()
		got, err := io.ReadAll(f)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes, first difference at %d", what, len(got), firstDiff(got, want))
		}
	}

	// Written through a write-only open while a reader (of the empty
	// file) holds the inode: no page of it is cached.
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	holder := open(os.O_RDONLY)
	w := open(os.O_WRONLY)
	for off := 0; off < size; off += 1 << 20 {
		if _, err := w.WriteAt(want[off:min(off+1<<20, size)], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	patch := bytes.Repeat([]byte{'w'}, 333)
	copy(want[1<<20-100:], patch)
	if _, err := w.WriteAt(patch, 1<<20-100); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := pagesOf(t, holder); n != 0 {
		t.Fatalf("a write-only open left %d pages of what it wrote in the page cache, want none", n)
	}
	holder.Close()
	waitReleased(t, s, p)

	// First read-only open of the changed file: streams.
	r := open(os.O_RDONLY)
	readCheck(r, "first read")
	if n := pagesOf(t, r); n != 0 {
		t.Fatalf("the first read of a %d-byte file left %d pages in the page cache, want none", size, n)
	}
	r.Close()
	// Second open: through the page cache, which keeps the file for the
	// third.
	r = open(os.O_RDONLY)
	readCheck(r, "second read")
	r.Close()
	r = open(os.O_RDONLY)
	if n := pagesOf(t, r); n == 0 {
		t.Fatalf("an unchanged file read through the page cache is not cached at its next open")
	}
	readCheck(r, "third read")

	// A streaming writer overwrites cached pages while r, which read
	// them, stays open: r reads the new bytes.
	w = open(os.O_WRONLY)
	patch = bytes.Repeat([]byte{'x'}, 5000)
	copy(want[3<<20-17:], patch)
	if _, err := w.WriteAt(patch, 3<<20-17); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(patch)+2)
	if _, err := r.ReadAt(got, 3<<20-18); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want[3<<20-18:3<<20-18+len(got)]) {
		t.Fatalf("a reader with cached pages does not see what a write-only open of the same mount wrote over them")
	}
	r.Close()

	// A changed file opened while another handle (O_RDWR, which keeps
	// the cache) is open: the reader shares the page cache.
	rw := open(os.O_RDWR)
	touch()
	r = open(os.O_RDONLY)
	readCheck(r, "read beside an O_RDWR open")
	if n := pagesOf(t, r); n == 0 {
		t.Fatalf("a reader that opened the file beside another open handle left nothing in the page cache")
	}
	r.Close()
	rw.Close()
	waitReleased(t, s, p)

	// A shared mapping of a streaming open (the changed file's first
	// open).
	touch()
	checkMapped(t, p, want, "streaming open")

	// A file smaller than StreamMin is cached from its first read.
	small := filepath.Join(s.Dir(), "small")
	if err := os.WriteFile(small, want[:1<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	p = small
	f := open(os.O_RDONLY)
	if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, want[:1<<20]) {
		t.Fatalf("small file: read %d bytes (%v), want its %d", len(got), err, 1<<20)
	}
	if n := pagesOf(t, f); n == 0 {
		t.Fatalf("a file below StreamMin left nothing in the page cache after its first read")
	}
}

// TestStreamOff: with StreamMin negative, the first read of a large file
// fills the page cache, as before streaming existed.
func TestStreamOff(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 2)
	opts := DefaultOptions()
	opts.StreamMin = -1
	s := mountCluster(t, cl, opts)
	p := filepath.Join(s.Dir(), "big")
	want := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(want))
	}
	if n := pagesOf(t, f); n == 0 {
		t.Fatalf("with streaming off, a first read left nothing in the page cache")
	}
}

// pagesOf returns how many pages of f's file the page cache holds
// (cachestat(2)).
func pagesOf(t *testing.T, f *os.File) uint64 {
	t.Helper()
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &st, 0); err != nil {
		t.Fatalf("cachestat %s: %v", f.Name(), err)
	}
	return st.Cache
}

// waitReleased waits until no handle of the file at p is open on s: the
// kernel sends a file's release after close(2) has returned.
func waitReleased(t *testing.T, s *Server, p string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for s.fsys.opened(st.Ino) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s is still open on the mount a minute after its last close", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamSetuid: a user who is not root writing through a write-only
// open of a setuid file clears the bit at the write, as on a local file
// system (the kernel does it through the page cache, which such an open
// therefore keeps): the mode the writer sees while its descriptor is
// still open is 0777, not 04777.
func TestStreamSetuid(t *testing.T) {
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: needs root (setpriv to another user): NOTHING WAS TESTED")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("SKIPPING: no setpriv (%v): NOTHING WAS TESTED", err)
	}
	cl := testcluster.Start(t, 2)
	s := mountCluster(t, cl, DefaultOptions())
	// The other user must reach the mount point.
	if err := os.Chmod(filepath.Dir(s.Dir()), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Dir(), "suid")
	if err := os.WriteFile(p, []byte("x"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(p, 0o4777); err != nil { // os.Chmod takes os.ModeSetuid, not 0o4000
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil || st.Mode&0o7777 != 0o4777 {
		t.Fatalf("chmod 4777: mode %o (%v)", st.Mode&0o7777, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The shell opens, writes and stats while the descriptor is open; it
	// runs in its own process (and changes directory there), not in this
	// one, which serves the mount.
	cmd := exec.CommandContext(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"sh", "-c", `exec 3>>"$1" && printf written >&3 && stat -c %a "$1"`, "sh", p)
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("write as nobody: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "777" {
		t.Fatalf("after a write by nobody through O_WRONLY|O_APPEND, the file's mode is %s while the writer has it open, want 777 (setuid cleared)", got)
	}
}
