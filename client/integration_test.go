package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// seed returns the test's random seed, printed so a failure can be replayed
// with STRATA_SEED.
func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("STRATA_SEED"); v != "" {
		fmt.Sscan(v, &s)
	}
	t.Logf("seed %d (replay with STRATA_SEED=%d)", s, s)
	return s
}

func fill(rnd *rand.Rand, p []byte) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := rnd.Uint64()
		for j := 0; j < 8; j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(p) &^ 7; i < len(p); i++ {
		p[i] = byte(rnd.Uint32())
	}
}

// readAll reads a whole file through a fresh open (close-to-open).
func readAll(t *testing.T, ctx context.Context, c *client.Client, name string) []byte {
	t.Helper()
	f, err := c.Open(ctx, name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, f); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return buf.Bytes()
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func mustEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes read, want %d; first difference at byte %d", what, len(got), len(want), firstDiff(got, want))
	}
}

// TestRandomIO writes, overwrites, truncates and reads many files with
// random layouts at unaligned offsets, and checks every byte against an
// in-memory model, across closes and reopens.
func TestRandomIO(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 7))
	cl := testcluster.Start(t, 4)
	c := cl.Client()
	ctx := testcluster.Context(t, 5*time.Minute)
	if err := c.Mkdir(ctx, "/r", 0o755); err != nil {
		t.Fatal(err)
	}
	maxSize := int64(8 << 20)
	model := map[string][]byte{}
	var names []string
	for i := 0; i < 24; i++ {
		name := fmt.Sprintf("/r/f%02d", i)
		spec := fmt.Sprintf("width=%d,unit=%dK", 1+rnd.IntN(4), 4<<rnd.IntN(6))
		f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644, spec)
		if err != nil {
			t.Fatalf("create %s %s: %v", name, spec, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		model[name] = nil
		names = append(names, name)
	}
	for step := 0; step < 300; step++ {
		name := names[rnd.IntN(len(names))]
		want := model[name]
		f, err := c.OpenFile(ctx, name, os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("step %d: open %s: %v", step, name, err)
		}
		for op := 0; op < 1+rnd.IntN(4); op++ {
			switch k := rnd.IntN(10); {
			case k < 5: // write, possibly past the end (sparse)
				off := rnd.Int64N(maxSize)
				n := rnd.Int64N(min(maxSize-off, 1<<20) + 1)
				p := make([]byte, n)
				fill(rnd, p)
				if _, err := f.WriteAt(p, off); err != nil {
					t.Fatalf("step %d: write %s [%d,+%d): %v", step, name, off, n, err)
				}
				if end := off + n; end > int64(len(want)) && n > 0 {
					want = append(want, make([]byte, end-int64(len(want)))...)
				}
				copy(want[off:], p)
			case k < 8: // read a random range
				off := rnd.Int64N(int64(len(want)) + 10)
				p := make([]byte, rnd.IntN(1<<20))
				got, err := f.ReadAt(p, off)
				wantN := max(0, min(int64(len(p)), int64(len(want))-off))
				if int64(got) != wantN || (err != nil && err != io.EOF) {
					t.Fatalf("step %d: read %s [%d,+%d) = %d, %v; want %d bytes", step, name, off, len(p), got, err, wantN)
				}
				if wantN > 0 {
					mustEqual(t, fmt.Sprintf("step %d: read %s at %d", step, name, off), p[:got], want[off:off+wantN])
				}
			default: // truncate, shrinking or growing
				size := rnd.Int64N(maxSize)
				if err := f.Truncate(size); err != nil {
					t.Fatalf("step %d: truncate %s to %d: %v", step, name, size, err)
				}
				if size <= int64(len(want)) {
					want = want[:size]
				} else {
					want = append(want, make([]byte, size-int64(len(want)))...)
				}
			}
		}
		if err := f.Close(); err != nil {
			t.Fatalf("step %d: close %s: %v", step, name, err)
		}
		model[name] = want
		if rnd.IntN(4) == 0 {
			mustEqual(t, fmt.Sprintf("step %d: reopen %s", step, name), readAll(t, ctx, c, name), want)
		}
	}
	for _, name := range names {
		mustEqual(t, "final "+name, readAll(t, ctx, c, name), model[name])
		a, err := c.Stat(ctx, name)
		if err != nil || a.Size != uint64(len(model[name])) {
			t.Fatalf("stat %s = %+v, %v; want size %d", name, a, err, len(model[name]))
		}
	}
}

// TestLargeFile writes a 256 MiB file (16 MiB with -short) sequentially,
// overwrites unaligned ranges, and reads it back byte-exact.
func TestLargeFile(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 8))
	size := int64(256 << 20)
	if testing.Short() {
		size = 16 << 20
	}
	cl := testcluster.Start(t, 4)
	c := cl.Client()
	ctx := testcluster.Context(t, 5*time.Minute)
	want := make([]byte, size)
	fill(rnd, want)
	f, err := c.OpenFileLayout(ctx, "/big", os.O_RDWR|os.O_CREATE, 0o644, "width=4,unit=1M")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadFrom(bytes.NewReader(want)); err != nil || n != size {
		t.Fatalf("write = %d, %v", n, err)
	}
	for i := 0; i < 20; i++ {
		off := rnd.Int64N(size - 3<<20)
		p := make([]byte, rnd.IntN(3<<20))
		fill(rnd, p)
		if _, err := f.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], p)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "256 MiB file", readAll(t, ctx, c, "/big"), want)
}

// TestSparse: a file written only at its far end reads zeros before.
func TestSparse(t *testing.T) {
	cl := testcluster.Start(t, 3)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	f, err := c.OpenFileLayout(ctx, "/sparse", os.O_RDWR|os.O_CREATE, 0o644, "width=3,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	off := int64(10<<20 + 12345)
	if _, err := f.WriteAt([]byte("tail"), off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, off+4)
	copy(want[off:], "tail")
	mustEqual(t, "sparse file", readAll(t, ctx, c, "/sparse"), want)
}

// TestConcurrentWriters: several clients write disjoint, unaligned ranges
// of one file at once; after they close, the file holds every range and its
// size is the largest end.
func TestConcurrentWriters(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 9))
	cl := testcluster.Start(t, 4)
	ctx := testcluster.Context(t, time.Minute)
	c0 := cl.Client()
	f, err := c0.OpenFileLayout(ctx, "/shared", os.O_RDWR|os.O_CREATE, 0o644, "width=4,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	const writers, span = 8, 777_777
	want := make([]byte, writers*span)
	fill(rnd, want)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cl.Client()
			f, err := c.OpenFile(ctx, "/shared", os.O_WRONLY, 0)
			if err != nil {
				errs <- err
				return
			}
			part := want[w*span : (w+1)*span]
			for off := 0; off < span; off += 100_000 { // several unaligned writes each
				end := min(off+100_000, span)
				if _, err := f.WriteAt(part[off:end], int64(w*span+off)); err != nil {
					errs <- err
					return
				}
			}
			errs <- f.Close()
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustEqual(t, "shared file", readAll(t, ctx, c0, "/shared"), want)
}

// TestRestartsKeepData: everything acknowledged before an MDS restart and a
// restart of every data server is still there after.
func TestRestartsKeepData(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 10))
	cl := testcluster.Start(t, 4)
	c := cl.Client()
	ctx := testcluster.Context(t, 2*time.Minute)
	files := map[string][]byte{}
	for _, d := range []string{"/a", "/a/b", "/c"} {
		if err := c.Mkdir(ctx, d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("/a/b/f%d", i)
		p := make([]byte, rnd.IntN(3<<20))
		fill(rnd, p)
		f, err := c.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	if err := c.Rename(ctx, "/a/b/f0", "/c/moved"); err != nil {
		t.Fatal(err)
	}
	files["/c/moved"] = files["/a/b/f0"]
	delete(files, "/a/b/f0")
	if err := c.Symlink(ctx, "/c/moved", "/a/link"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetXattr(ctx, "/c", "user.project", []byte("climate"), 0); err != nil {
		t.Fatal(err)
	}

	if err := cl.RestartMDS(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < cl.NumDS(); i++ {
		if err := cl.RestartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitDS(ctx, cl.NumDS()); err != nil {
		t.Fatal(err)
	}
	// The same client carries on: its pooled connections to the restarted
	// servers are dead and must be replaced transparently.
	c2 := c
	for name, want := range files {
		mustEqual(t, "after restart "+name, readAll(t, ctx, c2, name), want)
	}
	if got, err := c2.Readlink(ctx, "/a/link"); err != nil || got != "/c/moved" {
		t.Fatalf("readlink after restart = %q, %v", got, err)
	}
	if v, err := c2.GetXattr(ctx, "/c", "user.project"); err != nil || string(v) != "climate" {
		t.Fatalf("xattr after restart = %q, %v", v, err)
	}
	if a, err := c2.Stat(ctx, "/a/b"); err != nil || a.Mode&0o777 != 0o750 {
		t.Fatalf("stat /a/b after restart = %+v, %v", a, err)
	}
}

// TestBitFlipDetected: a bit flipped in a stored block makes the read fail
// with EIO; the corrupt bytes are never returned, other columns still read.
func TestBitFlipDetected(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 11))
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	want := make([]byte, 4<<20)
	fill(rnd, want)
	f, err := c.OpenFileLayout(ctx, "/precious", os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=1M")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := c.GetLayout(ctx, "/precious")
	if err != nil {
		t.Fatal(err)
	}
	// Column 0 holds file bytes [0,1M) and [2M,3M); flip one bit at file byte 2M+100.
	dsIndex := -1
	for i := 0; i < cl.NumDS(); i++ {
		if info.Layout.Targets[0] == fmt.Sprintf("ds%d", i+1) {
			dsIndex = i
		}
	}
	if dsIndex < 0 {
		t.Fatalf("column 0 on unknown data server %q", info.Layout.Targets[0])
	}
	a, _ := c.Stat(ctx, "/precious")
	path := cl.DS(dsIndex).ComponentPath(componentID(a.Ino, info.Layout.Generation, 0))
	flipBit(t, path, 1<<20+100)

	r, err := c.Open(ctx, "/precious")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := make([]byte, 1<<20)
	n, err := r.ReadAt(p, 2<<20)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of the corrupt range = %d bytes, %v; want EIO", n, err)
	}
	// A read of the whole file asks column 0 for both its units in one
	// request (readChunks): the corrupt block is in the middle of the
	// reply, and its flipped byte is not left in the caller's buffer.
	all := make([]byte, len(want))
	if n, err := r.ReadAt(all, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of the whole file = %d bytes, %v; want EIO", n, err)
	}
	if all[2<<20+100] == want[2<<20+100]^0x10 {
		t.Fatal("read of the whole file left the corrupt byte in the caller's buffer")
	}
	// Column 1 is intact.
	if _, err := r.ReadAt(p, 1<<20); err != nil {
		t.Fatalf("read of an intact column: %v", err)
	}
	mustEqual(t, "intact column", p, want[1<<20:2<<20])
}

func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, 1)
	if _, err := fh.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := fh.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
