package fuse

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestDirectIO: on a DirectIO mount a file written in large and small
// unaligned pieces reads back byte for byte in 4 KiB reads (a reader
// with a small buffer), 1 MiB reads that straddle the read-ahead blocks,
// and through a shared mapping (last: a mapping does fill the page
// cache); and what read(2) read is not in the kernel's page cache, where
// a default mount of the same namespace leaves it.
func TestDirectIO(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 4)
	opts := DefaultOptions()
	opts.DirectIO = true
	direct := mountCluster(t, cl, opts)
	cached := mountCluster(t, cl, DefaultOptions())

	const size = 9<<20 + 1234
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*13 + i>>16)
	}
	p := filepath.Join(direct.Dir(), "d")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// 1 MiB writes, then a patch in small writes at odd offsets.
	for off := 0; off < size; off += 1 << 20 {
		if _, err := f.WriteAt(want[off:min(off+1<<20, size)], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		off := 3<<20 - 777 + i*1001
		patch := bytes.Repeat([]byte{byte(i)}, 333)
		copy(want[off:], patch)
		if _, err := f.WriteAt(patch, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	readAll := func(dir string, chunk, first int) []byte {
		t.Helper()
		f, err := os.Open(filepath.Join(dir, "d"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got := make([]byte, 0, size)
		buf := make([]byte, chunk)
		for n := first; ; n = chunk {
			k, err := f.Read(buf[:n])
			got = append(got, buf[:k]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	for _, c := range []struct{ chunk, first int }{{4096, 4096}, {1 << 20, 4096 + 17}} {
		if got := readAll(direct.Dir(), c.chunk, c.first); !bytes.Equal(got, want) {
			t.Fatalf("direct_io, %d-byte reads: read %d bytes, first difference at %d", c.chunk, len(got), firstDiff(got, want))
		}
	}
	// The same bytes read through the default mount are in its page
	// cache, and not in the direct mount's.
	if got := readAll(cached.Dir(), 1<<20, 1<<20); !bytes.Equal(got, want) {
		t.Fatalf("default mount: first difference at %d", firstDiff(got, want))
	}
	if n := cachedPages(t, filepath.Join(cached.Dir(), "d")); n == 0 {
		t.Fatalf("a default mount keeps no page of a file it just read: the page-cache check below cannot tell")
	}
	readAll(direct.Dir(), 1<<20, 1<<20)
	if n := cachedPages(t, p); n != 0 {
		t.Fatalf("direct_io mount: %d pages of the file are in the page cache after a read, want none", n)
	}
	checkMapped(t, p, want, "direct_io")
}

// checkMapped maps the file at p shared in another process and checks
// that its bytes are want. A page fault on the mount must not happen in
// this process: a fault waiting for the mount's answer stops the Go
// runtime's stop-the-world, and the mount with it.
func checkMapped(t *testing.T, p string, want []byte, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], p, "0", strconv.Itoa(len(want)))
	cmd.Env = append(os.Environ(), helperEnv+"=mmapsum")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s, shared mapping in another process: %v", what, err)
	}
	if got, sum := strings.TrimSpace(string(out)), fmt.Sprintf("%x", sha256.Sum256(want)); got != sum {
		t.Fatalf("%s, shared mapping: the bytes' sha256 is %s, want %s", what, got, sum)
	}
}

// mmapSum maps the first n bytes of the file at path shared, read-only,
// and prints their sha256 (the helper of TestDirectIO).
func mmapSum(path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap shared %s: %w", path, err)
	}
	defer unix.Munmap(m)
	fmt.Printf("%x\n", sha256.Sum256(m))
	return nil
}

// cachedPages returns how many pages of the file at p the page cache
// holds (cachestat(2)).
func cachedPages(t *testing.T, p string) uint64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return pagesOf(t, f)
}
