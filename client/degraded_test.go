package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/layout"
)

// faults collects the component faults a file reports.
type faults struct {
	mu   sync.Mutex
	list []client.Fault
}

func (fs *faults) add(f client.Fault) {
	fs.mu.Lock()
	fs.list = append(fs.list, f)
	fs.mu.Unlock()
}

// has reports whether a fault of op on component comp wrapping target
// was seen.
func (fs *faults) has(op string, comp int, target error) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.list {
		if f.Op == op && f.Component == comp && errors.Is(f.Err, target) {
			return true
		}
	}
	return false
}

// readWatched reads a whole file through a fresh client and open, with a
// fault handler, and returns the bytes, the error and the faults.
func readWatched(t *testing.T, ctx context.Context, cl *testcluster.Cluster, name string) ([]byte, error, *faults) {
	t.Helper()
	c := clientWith(t, cl, 256<<10) // fresh: no keep-alive to a restarted server
	f, err := c.Open(ctx, name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer f.Close()
	fs := &faults{}
	f.SetFaultHandler(fs.add)
	var buf bytes.Buffer
	_, err = io.Copy(&buf, io.NewSectionReader(f, 0, f.Size()))
	return buf.Bytes(), err, fs
}

// writeFile creates name with spec and content want, and returns its
// layout and inode.
func writeFile(t *testing.T, ctx context.Context, c *client.Client, name, spec string, want []byte) (layout.Layout, uint64) {
	t.Helper()
	f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, spec)
	if err != nil {
		t.Fatalf("create %s %s: %v", name, spec, err)
	}
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Layout(), f.Ino()
}

// stopped runs fn with the data servers of the given components stopped.
func stopped(t *testing.T, ctx context.Context, cl *testcluster.Cluster, l layout.Layout, comps []int, fn func()) {
	t.Helper()
	var idx []int
	for _, comp := range comps {
		i := dsIndex(t, cl, l.Targets[comp])
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, i)
	}
	fn()
	for _, i := range idx {
		if err := cl.StartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDegradedRead: with any one data server of an rs:4+2 or a mirror:2
// file stopped, and with any two of the rs:4+2 file's, every byte reads
// right and the lost component is reported; with one more lost than the
// scheme tolerates the read fails, never returning wrong bytes.
func TestDegradedRead(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 23))
	cl := testcluster.Start(t, 6)
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	want := make([]byte, 3<<20+12345) // a partial last row
	fill(rnd, want)
	rs, _ := writeFile(t, ctx, c, "/rs", "unit=64K,scheme=rs:4+2", want)
	mir, _ := writeFile(t, ctx, c, "/mirror", "unit=64K,scheme=mirror:2", want)
	if len(rs.Targets) != 6 || len(mir.Targets) != 6 {
		t.Fatalf("layouts %s on %v and %s on %v", rs, rs.Targets, mir, mir.Targets)
	}
	for _, tc := range []struct {
		name  string
		l     layout.Layout
		comps []int
	}{
		{"/rs", rs, []int{0}}, {"/rs", rs, []int{1}}, {"/rs", rs, []int{2}}, {"/rs", rs, []int{3}}, {"/rs", rs, []int{4}}, {"/rs", rs, []int{5}},
		{"/rs", rs, []int{0, 2}}, {"/rs", rs, []int{1, 4}}, {"/rs", rs, []int{3, 0}}, {"/rs", rs, []int{4, 5}},
		{"/mirror", mir, []int{0}}, {"/mirror", mir, []int{4}}, {"/mirror", mir, []int{0, 4, 2}}, // one copy of each column
	} {
		stopped(t, ctx, cl, tc.l, tc.comps, func() {
			got, err, fs := readWatched(t, ctx, cl, tc.name)
			if err != nil {
				t.Fatalf("%s with components %v down: %v", tc.name, tc.comps, err)
			}
			mustEqual(t, fmt.Sprintf("%s with components %v down", tc.name, tc.comps), got, want)
			for _, comp := range tc.comps {
				if isData := comp < tc.l.Width || tc.l.Scheme.Kind == layout.KindMirror; isData && !fs.has("read", comp, rpc.ErrUnavailable) {
					t.Errorf("%s: no read fault reported for component %d", tc.name, comp)
				}
			}
		})
	}
	// One too many: the read fails with EIO or unavailable, no wrong bytes.
	for _, tc := range []struct {
		name  string
		l     layout.Layout
		comps []int
	}{{"/rs", rs, []int{0, 1, 5}}, {"/mirror", mir, []int{1, 4}}} {
		stopped(t, ctx, cl, tc.l, tc.comps, func() {
			_, err, _ := readWatched(t, ctx, cl, tc.name)
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, rpc.ErrUnavailable) {
				t.Fatalf("%s with components %v down: %v, want EIO or unavailable", tc.name, tc.comps, err)
			}
		})
	}
}

// TestDegradedWrite: with a data column of an rs:4+2 file down, a write
// to the other columns of its rows succeeds (the lost column is rebuilt
// to re-encode the parity), and so does a write to the lost column: it is
// reported as a fault and to the MDS (LAYOUTERROR), which marks the
// component stale. Afterwards the file reads right, healthy and with two
// more columns down (the stale one is read around); once its server is
// back the MDS rebuilds the stale component and the file reads right
// with two others down (so the rebuilt one is right).
func TestDegradedWrite(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 29))
	cl := testcluster.Start(t, 6)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	const unit = 64 << 10
	want := make([]byte, 10*4*unit+777)
	fill(rnd, want)
	l, _ := writeFile(t, ctx, c, "/d", fmt.Sprintf("unit=%d,scheme=rs:4+2", unit), want)
	stopped(t, ctx, cl, l, []int{3}, func() {
		w := clientWith(t, cl, 1<<20)
		f, err := w.OpenFile(ctx, "/d", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fs := &faults{}
		f.SetFaultHandler(fs.add)
		// Rows 2..5, columns 0..2 only, at unaligned offsets.
		for r := int64(2); r < 6; r++ {
			off := r*4*unit + 100 + rnd.Int64N(unit/2)
			p := make([]byte, 2*unit+rnd.Int64N(unit/2-200))
			fill(rnd, p)
			if _, err := f.WriteAt(p, off); err != nil {
				t.Fatalf("degraded write of row %d: %v", r, err)
			}
			copy(want[off:], p)
		}
		// Column 3 of row 7 is on the stopped server.
		off := int64(7*4*unit + 3*unit + 5)
		if _, err := f.WriteAt([]byte("lost"), off); err != nil {
			t.Fatalf("a write to a stopped data server of an rs:4+2 file: %v", err)
		}
		copy(want[off:], "lost")
		if !fs.has("write", 3, rpc.ErrUnavailable) {
			t.Errorf("the failed write was not reported: %+v", fs.list)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := c.GetLayout(ctx, "/d")
		if err != nil || len(info.Stale) != 1 || info.Stale[0] != 3 {
			t.Fatalf("stale components after the failed write: %+v, %v; want [3]", info, err)
		}
	})
	got, err, _ := readWatched(t, ctx, cl, "/d")
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "healthy after a degraded write", got, want)
	for _, comp := range []int{0, 1, 4} {
		stopped(t, ctx, cl, l, []int{comp}, func() {
			got, err, _ := readWatched(t, ctx, cl, "/d")
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, fmt.Sprintf("component %d down, component 3 stale", comp), got, want)
		})
	}
	waitHealthy(t, ctx, c, "/d")
	stopped(t, ctx, cl, l, []int{0, 5}, func() {
		got, err, _ := readWatched(t, ctx, cl, "/d")
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "components 0 and 5 down after component 3 was rebuilt", got, want)
	})
}

// waitHealthy waits until the MDS has rebuilt every stale component of
// name.
func waitHealthy(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	for {
		info, err := c.GetLayout(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Stale) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still has stale components %v", name, info.Stale)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestBitFlipRedundant: bits flipped in stored blocks of an rs:4+2 and a
// mirror:2 file (data and parity, different rows and columns) do not
// change what reads return: the block fails its CRC (EIO, reported) and
// the read is served from parity or the other copy; the MDS, told by the
// reads, has the blocks repaired.
func TestBitFlipRedundant(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 31))
	cl := testcluster.Start(t, 6)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	const unit = 64 << 10
	want := make([]byte, 2<<20+999)
	fill(rnd, want)
	rs, rsIno := writeFile(t, ctx, c, "/rs", fmt.Sprintf("unit=%d,scheme=rs:4+2", unit), want)
	mir, mirIno := writeFile(t, ctx, c, "/mirror", fmt.Sprintf("width=2,unit=%d,scheme=mirror:2", unit), want)
	flip := func(l layout.Layout, ino uint64, comp int, colOff int64) {
		t.Helper()
		i := dsIndex(t, cl, l.Targets[comp])
		flipBit(t, cl.DS(i).ComponentPath(rpc.ComponentID{Ino: ino, Gen: l.Generation, Col: uint32(comp)}), colOff)
	}
	flip(rs, rsIno, 1, unit+4567)  // row 1, data column 1
	flip(rs, rsIno, 3, 5*unit+17)  // row 5, data column 3
	flip(rs, rsIno, 4, 3*unit+99)  // row 3, parity 0: unused until a data column is lost
	flip(mir, mirIno, 0, 3*unit+5) // copy 0 of column 0
	flip(mir, mirIno, 3, 7*unit+9) // copy 1 of column 1
	flip(mir, mirIno, 1, 2*unit+1) // copy 0 of column 1, another chunk

	for _, tc := range []struct {
		name  string
		comps []int
	}{{"/rs", []int{1, 3}}, {"/mirror", nil}} {
		got, err, fs := readWatched(t, ctx, cl, tc.name)
		if err != nil {
			t.Fatalf("read %s with flipped bits: %v", tc.name, err)
		}
		mustEqual(t, tc.name+" with flipped bits", got, want)
		for _, comp := range tc.comps {
			if !fs.has("read", comp, syscall.EIO) {
				t.Errorf("%s: the corrupt block of component %d was not reported", tc.name, comp)
			}
		}
	}
	// Row 3 rebuilt with column 0 lost must skip its corrupt parity 0; rows
	// 1 and 5 lose two data units (down and corrupt) and use both parities.
	stopped(t, ctx, cl, rs, []int{0}, func() {
		got, err, fs := readWatched(t, ctx, cl, "/rs")
		if err != nil {
			t.Fatal(err)
		}
		mustEqual(t, "/rs with column 0 down and a corrupt parity block", got, want)
		if !fs.has("read", 4, syscall.EIO) {
			t.Errorf("the corrupt parity block was not reported")
		}
	})
	// The reads reported the corrupt blocks (LAYOUTERROR), the MDS had
	// them checked and repaired from redundancy: reads stop finding any.
	for _, name := range []string{"/rs", "/mirror"} {
		for {
			got, err, fs := readWatched(t, ctx, cl, name)
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, name+" while its corrupt blocks are repaired", got, want)
			if len(fs.list) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: corrupt blocks not repaired: %+v", name, fs.list)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// TestRedundantBadInput: impossible schemes are refused with errors that
// name the limit, before anything is created.
func TestRedundantBadInput(t *testing.T) {
	cl := testcluster.Start(t, 4)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec  string
		errno syscall.Errno
		msg   string
	}{
		{"scheme=rs:0+2", syscall.EINVAL, "K must be 1 to 16 data units"},
		{"scheme=rs:20+4", syscall.EINVAL, "K must be 1 to 16 data units"},
		{"scheme=rs:4+9", syscall.EINVAL, "M must be 1 to 8 parity units"},
		{"scheme=mirror:1", syscall.EINVAL, "mirror needs 2 to 8 copies"},
		{"scheme=mirror:9", syscall.EINVAL, "mirror needs 2 to 8 copies"},
		{"width=4,scheme=rs:2+1", syscall.EINVAL, "width 4 does not match scheme rs:2+1"},
		{"scheme=rs:4+2", syscall.EINVAL, "scheme rs:4+2 needs 6 data servers on distinct nodes, 4 registered"},
		{"width=3,scheme=mirror:2", syscall.EINVAL, "width 3 with scheme mirror:2 needs 6 data servers on distinct nodes, 4 registered"},
	} {
		err := c.SetLayout(ctx, "/d", tc.spec)
		if !errors.Is(err, tc.errno) || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("setstripe %q: %v, want %v naming %q", tc.spec, err, tc.errno, tc.msg)
		}
	}
	_, err := c.OpenFileLayout(ctx, "/d/f", os.O_RDWR|os.O_CREATE, 0o644, "scheme=rs:4+2")
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "needs 6 data servers on distinct nodes, only 4 are up") {
		t.Errorf("create rs:4+2 on 4 data servers: %v", err)
	}
	if _, err := c.Stat(ctx, "/d/f"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a refused create left %v", err)
	}
	// What fits is accepted: mirror:2 over 4 servers is 2 columns.
	if err := c.SetLayout(ctx, "/d", "scheme=mirror:2"); err != nil {
		t.Fatal(err)
	}
	want := []byte("two copies")
	l, _ := writeFile(t, ctx, c, "/d/m", "", want)
	if l.String() != "width=2,unit=1M,scheme=mirror:2" || len(l.Targets) != 4 {
		t.Fatalf("mirror:2 on 4 data servers: %s on %v", l, l.Targets)
	}
	mustEqual(t, "/d/m", readAll(t, ctx, c, "/d/m"), want)
}
