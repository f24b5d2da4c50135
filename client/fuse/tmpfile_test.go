package fuse

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTmpfile: open(2) with O_TMPFILE on the mount makes a file with no
// name (st_nlink 0) that can be written, then named with linkat(2), both
// with AT_EMPTY_PATH and through /proc/self/fd; its bytes read back
// through the mount and the library. An O_TMPFILE file never linked is
// gone at its close, and one opened with O_EXCL cannot be linked.
func TestTmpfile(t *testing.T) {
	cl, s := startMount(t, 2)
	dir := filepath.Join(s.Dir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR, 0o640)
	if err != nil {
		t.Fatalf("open O_TMPFILE: %v", err)
	}
	defer unix.Close(fd)
	want := []byte("written before it had a name\n")
	if _, err := unix.Write(fd, want); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink != 0 || st.Mode != unix.S_IFREG|0o640 || st.Size != int64(len(want)) {
		t.Fatalf("fstat of the unnamed file: nlink %d mode %o size %d; want 0, %o, %d", st.Nlink, st.Mode, st.Size, unix.S_IFREG|0o640, len(want))
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the directory of the unnamed file lists %d entries (%v), want none", len(ents), err)
	}
	if err := unix.Linkat(fd, "", unix.AT_FDCWD, filepath.Join(dir, "named"), unix.AT_EMPTY_PATH); err != nil {
		t.Fatalf("linkat AT_EMPTY_PATH: %v", err)
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, filepath.Join(dir, "named2"), unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("linkat %s: %v", proc, err)
	}
	more := []byte("and after\n")
	if _, err := unix.Write(fd, more); err != nil {
		t.Fatal(err)
	}
	want = append(want, more...)
	if err := unix.Fstat(fd, &st); err != nil || st.Nlink != 2 {
		t.Fatalf("nlink after two links = %d (%v), want 2", st.Nlink, err)
	}
	if err := unix.Close(fd); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, name := range []string{"named", "named2"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != string(want) {
			t.Fatalf("read %s through the mount: %q (%v), want %q", name, got, err, want)
		}
	}
	checkLibrary(t, cl, "/d/named", want)
	waitNames(t, dir, []string{"named", "named2"})

	// Never linked: gone at the close.
	fd2, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(fd2, []byte("scratch")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Close(fd2); err != nil {
		t.Fatal(err)
	}
	waitNames(t, dir, []string{"named", "named2"})

	// O_EXCL: the file may never get a name.
	fd3, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Linkat(fd3, "", unix.AT_FDCWD, filepath.Join(dir, "excl"), unix.AT_EMPTY_PATH)
	unix.Close(fd3)
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("linkat of an O_TMPFILE|O_EXCL file = %v, want ENOENT", err)
	}
	waitNames(t, dir, []string{"named", "named2"})
}

// waitNames waits until dir holds exactly the names want, hidden ones
// included (the kernel sends the release of a closed file asynchronously).
func waitNames(t *testing.T, dir string, want []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if slices.Equal(names, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("directory holds %q, want %q", names, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
