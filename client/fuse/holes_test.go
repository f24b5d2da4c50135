package fuse

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestPunchHole: fallocate(2) FALLOC_FL_PUNCH_HOLE on the mount, for each
// redundancy scheme. The range reads as zeros, through the mount and
// through the library, the bytes around it are intact, the size is kept,
// and df shows the data servers' space given back.
func TestPunchHole(t *testing.T) {
	for _, tc := range []struct{ name, layout string }{
		{"none", "width=2,unit=1M"},
		{"mirror", "width=1,unit=1M,scheme=mirror:2"},
		{"rs", "width=2,unit=1M,scheme=rs:2+1"},
	} {
		t.Run(tc.name, func(t *testing.T) { testPunchHole(t, tc.layout) })
	}
}

func testPunchHole(t *testing.T, spec string) {
	cl, s := startMount(t, 3, testcluster.WithCapacity(256<<20), testcluster.WithDefaultLayout(spec))
	name := filepath.Join(s.Dir(), "data")
	want := make([]byte, 12<<20)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(rnd.Uint32())
	}
	if err := writeFile(name, want); err != nil {
		t.Fatal(err)
	}
	before := settledFree(t, cl, s.Dir())

	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE, 0, 4096); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("punch-hole without keep-size = %v, want EOPNOTSUPP (as Linux)", err)
	}
	const off, n = 1<<20 + 123, 8 << 20
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n); err != nil {
		t.Fatalf("punch %d bytes at %d: %v", n, off, err)
	}
	clear(want[off : off+n])
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want)+10)
	k, err := f.ReadAt(got, 0)
	if k != len(want) || !bytes.Equal(got[:k], want) {
		t.Fatalf("read through the mount after the punch: %d bytes (%v), want %d with the range zeroed", k, err, len(want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	checkLibrary(t, cl, "/data", want)

	// Whole blocks of 8 MiB punched: at least 5 MiB must come back, more
	// with copies or parity.
	deadline := time.Now().Add(30 * time.Second)
	for {
		after := statFree(t, s.Dir())
		if after >= before+5<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("df free space %d bytes before the punch, %d after: want at least 5 MiB back", before, after)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestZeroRangeAndAllocate: FALLOC_FL_ZERO_RANGE zeros a range and, without
// FALLOC_FL_KEEP_SIZE, extends the file; fallocate mode 0 extends the file
// and fails with ENOSPC for more than the free space, KEEP_SIZE keeps the
// size; modes Strata has not (collapse) are EOPNOTSUPP.
func TestZeroRangeAndAllocate(t *testing.T) {
	cl, s := startMount(t, 2, testcluster.WithCapacity(64<<20), testcluster.WithDefaultLayout("width=2,unit=64K"))
	name := filepath.Join(s.Dir(), "z")
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := writeFile(name, want); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 1000, 100000); err != nil {
		t.Fatalf("zero-range inside the file: %v", err)
	}
	clear(want[1000:101000])
	if err := unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 1<<20-10, 30); err != nil {
		t.Fatalf("zero-range past the end: %v", err)
	}
	clear(want[1<<20-10:])
	want = append(want, make([]byte, 20)...)
	if err := unix.Fallocate(fd, 0, 2<<20, 1<<20); err != nil {
		t.Fatalf("fallocate to 3 MiB: %v", err)
	}
	want = append(want, make([]byte, 3<<20-len(want))...)
	if err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 3<<20, 1<<20); err != nil {
		t.Fatalf("fallocate keep-size: %v", err)
	}
	if err := unix.Fallocate(fd, 0, 0, 1<<40); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fallocate of 1 TiB on 128 MiB of data servers = %v, want ENOSPC", err)
	}
	if err := unix.Fallocate(fd, unix.FALLOC_FL_COLLAPSE_RANGE, 0, 64<<10); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("collapse-range = %v, want EOPNOTSUPP", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size != int64(len(want)) {
		t.Fatalf("size %d (%v), want %d", st.Size, err, len(want))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want %d with the zeroed ranges", len(got), err, len(want))
	}
	checkLibrary(t, cl, "/z", want)
}

// TestSparseTruncateAndEFBIG: truncate(1) to 100 GiB on data servers of
// 64 MiB each succeeds, costs no space (df) and reads as zeros; past the
// largest file the layout addresses it fails with EFBIG, as a local file
// system answers, and the file is left as it was.
func TestSparseTruncateAndEFBIG(t *testing.T) {
	cl, s := startMount(t, 2, testcluster.WithCapacity(64<<20), testcluster.WithDefaultLayout("width=2,unit=1M"))
	name := filepath.Join(s.Dir(), "sparse")
	if err := writeFile(name, []byte("head")); err != nil {
		t.Fatal(err)
	}
	before := settledFree(t, cl, s.Dir())
	const big = 100 << 30
	if err := os.Truncate(name, big); err != nil {
		t.Fatalf("truncate to 100 GiB: %v", err)
	}
	if err := os.Truncate(name, 999_999_999_999_999); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("truncate to 999,999,999,999,999 = %v, want EFBIG", err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Size() != big {
		t.Fatalf("size after the refused truncate: %v (%v), want %d", fi.Size(), err, int64(big))
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8192)
	for _, off := range []int64{0, 50 << 30, big - 100} {
		k, err := f.ReadAt(buf, off)
		wantN := min(len(buf), int(big-off))
		wantB := make([]byte, wantN)
		if off == 0 {
			copy(wantB, "head")
		}
		if k != wantN || !bytes.Equal(buf[:k], wantB) {
			t.Fatalf("read at %d: %d bytes (%v), want %d zeros", off, k, err, wantN)
		}
	}
	// Once the heartbeats have reported, df must show no loss.
	deadline := time.Now().Add(30 * time.Second)
	for {
		after := settledFree(t, cl, s.Dir())
		if after+1<<20 >= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("df free space %d bytes before the 100 GiB truncate, %d after: want (about) the same", before, after)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The library answers the same.
	lf, err := cl.Client().OpenFile(context.Background(), "/sparse", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if _, err := lf.WriteAt([]byte("x"), 999_999_999_999_999); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("library write at 999,999,999,999,999 = %v, want EFBIG", err)
	}
}

// statFree returns the free bytes df shows for the mount.
func statFree(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Frsize)
}

// settledFree returns df's free bytes once every data server is up (a
// server whose heartbeat is late under load counts no space) and two
// readings a heartbeat and more apart agree.
func settledFree(t *testing.T, cl *testcluster.Cluster, dir string) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	allUp := func() bool {
		st, err := cl.Client().StatFS(context.Background())
		return err == nil && st.DSTotal > 0 && st.DSUp == st.DSTotal
	}
	last := statFree(t, dir)
	for {
		time.Sleep(500 * time.Millisecond)
		now := statFree(t, dir)
		if (now == last && allUp()) || time.Now().After(deadline) {
			return now
		}
		last = now
	}
}

// checkLibrary reads path through a fresh client of the cluster and
// compares it with want.
func checkLibrary(t *testing.T, cl *testcluster.Cluster, path string, want []byte) {
	t.Helper()
	lf, err := cl.Client().Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	got := make([]byte, len(want)+10)
	k, err := lf.ReadAt(got, 0)
	if k != len(want) || !bytes.Equal(got[:k], want) {
		t.Fatalf("read %s through the library: %d bytes (%v), want %d", path, k, err, len(want))
	}
}
