package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// inlineCluster starts a cluster whose MDS keeps files up to 64 KiB
// inline.
func inlineCluster(t *testing.T, nds int, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	opts = append(opts, testcluster.WithMDSConfig(func(c *mds.Config) { c.InlineMax = 64 << 10 }))
	return testcluster.Start(t, nds, opts...)
}

// writeInline creates name with data through c.
func writeInline(ctx context.Context, t *testing.T, c *client.Client, name string, data []byte) {
	t.Helper()
	f, err := c.Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
}

// readInline reads name back through c.
func readInline(ctx context.Context, t *testing.T, c *client.Client, name string) []byte {
	t.Helper()
	f, err := c.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return got
}

// TestInlineSmallFiles: files up to the threshold read back byte-identical
// with every data server stopped (their bytes are in the MDS); one past it
// does not, it lives on the data servers.
func TestInlineSmallFiles(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 16))
	cl := inlineCluster(t, 2)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	files := map[string][]byte{}
	for _, size := range []int{0, 1, 4096, 10000, 64 << 10} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rnd.Uint32())
		}
		name := fmt.Sprintf("/small-%d", size)
		writeInline(ctx, t, c, name, data)
		files[name] = data
	}
	// Written in pieces, overwritten and truncated in place.
	f, err := c.Create(ctx, "/pieces")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 0, 9000)
	for i := range 9 {
		p := bytes.Repeat([]byte{byte('a' + i)}, 1000)
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}
	if _, err := f.WriteAt([]byte("HELLO"), 500); err != nil {
		t.Fatal(err)
	}
	copy(want[500:], "HELLO")
	if err := f.Truncate(8000); err != nil {
		t.Fatal(err)
	}
	want = want[:8000]
	if err := f.Truncate(8100); err != nil {
		t.Fatal(err)
	}
	want = append(want, make([]byte, 100)...)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	files["/pieces"] = want

	big := make([]byte, 64<<10+1)
	writeInline(ctx, t, c, "/big", big)

	for i := range cl.NumDS() {
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if got := readInline(ctx, t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("%s with the data servers down: read %d bytes, want the %d written", name, len(got), len(data))
		}
		st, err := c.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size != uint64(len(data)) {
			t.Fatalf("%s: size %d, want %d", name, st.Size, len(data))
		}
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if f, err := c.Open(short, "/big"); err == nil {
		_, err = io.ReadAll(f)
		f.Close()
		if err == nil {
			t.Fatal("a file past the inline threshold read back with every data server down")
		}
	}
}

// TestInlineGrowsIntoStripes: an inline file that grows past the threshold
// moves to its layout's data servers (4 columns, and rs:2+1) and reads
// back byte-identical, before and after a reopen.
func TestInlineGrowsIntoStripes(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 17))
	cl := inlineCluster(t, 4)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	for _, spec := range []string{"width=4,unit=64K,scheme=none", "width=2,unit=64K,scheme=rs:2+1", "width=2,unit=64K,scheme=mirror:2"} {
		name := "/grow-" + spec[:7] + spec[len(spec)-6:]
		f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644, spec)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 5000)
		for i := range head {
			head[i] = byte(rnd.Uint32())
		}
		if _, err := f.Write(head); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// Another handle extends it past the threshold, writing at the end
		// and leaving a hole between.
		f, err = c.OpenFile(ctx, name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		tail := make([]byte, 700<<10)
		for i := range tail {
			tail[i] = byte(rnd.Uint32())
		}
		const at = 300 << 10
		if _, err := f.WriteAt(tail, at); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, at+len(tail))
		copy(want, head)
		copy(want[at:], tail)
		got := make([]byte, len(want))
		if _, err := f.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the writer reads back other bytes than it wrote", spec)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readInline(ctx, t, c, name); !bytes.Equal(got, want) {
			t.Fatalf("%s: after the move to the data servers read %d bytes, not the %d written", spec, len(got), len(want))
		}
		// ftruncate past the threshold moves a file too.
		small := "/trunc-" + spec[:7]
		writeInline(ctx, t, c, small, head[:100])
		f, err = c.OpenFile(ctx, small, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(1 << 20); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		want = make([]byte, 1<<20)
		copy(want, head[:100])
		if got := readInline(ctx, t, c, small); !bytes.Equal(got, want) {
			t.Fatalf("%s: truncated past the threshold, read back other bytes", spec)
		}
	}
}

// TestInlineOlderReader: a caller that does not ask for inline data (an
// older client, the NFS front end's layouts) gets the layout of a file the
// MDS moved to its data servers first, and reading those reads the bytes
// written.
func TestInlineOlderReader(t *testing.T) {
	cl := inlineCluster(t, 2)
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("inline-"), 1000)
	writeInline(ctx, t, c, "/f", data)
	st, err := c.Stat(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.LayoutGetIno(ctx, st.Ino, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Inline != nil {
		t.Fatal("inline data sent to a caller that did not ask for it")
	}
	if r.Attr.Size != uint64(len(data)) {
		t.Fatalf("size %d, want %d", r.Attr.Size, len(data))
	}
	if got := readInline(ctx, t, c, "/f"); !bytes.Equal(got, data) {
		t.Fatal("moved to the data servers for an older reader, the file reads back other bytes")
	}
	// It stays there: with the data servers down it cannot be read.
	for i := range cl.NumDS() {
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if f, err := c.Open(short, "/f"); err == nil {
		_, err = io.ReadAll(f)
		f.Close()
		if err == nil {
			t.Fatal("the moved file still reads with every data server down: it was not moved")
		}
	}
}

// TestInlineFailover: inline files written to three MDS voters survive the
// leader's death and read back byte-identical from the new leader.
func TestInlineFailover(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 18))
	cl := inlineCluster(t, 2, testcluster.WithMDS(3))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for i := range 40 {
		data := make([]byte, 1+rnd.IntN(64<<10))
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		name := fmt.Sprintf("/d/f%d", i)
		writeInline(ctx, t, c, name, data)
		files[name] = data
	}
	leader := waitLeader(t, cl)
	t.Logf("killing leader mds%d", leader+1)
	if err := cl.StopMDSReplica(leader); err != nil {
		t.Fatal(err)
	}
	for i := range cl.NumDS() { // the bytes must come from the MDS
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if got := readInline(ctx, t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("%s after the leader's death: read %d bytes, want the %d written", name, len(got), len(data))
		}
	}
}

// TestInlineQuota: inline bytes count against the owner's byte quota, and
// a write past it is refused with EDQUOT.
func TestInlineQuota(t *testing.T) {
	cl := inlineCluster(t, 2)
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	uid := uint32(os.Getuid())
	before, err := c.Quota(ctx, rpc.QuotaUser, uid)
	if err != nil {
		t.Fatal(err)
	}
	writeInline(ctx, t, c, "/q1", make([]byte, 30000))
	after, err := c.Quota(ctx, rpc.QuotaUser, uid)
	if err != nil {
		t.Fatal(err)
	}
	if after.Bytes-before.Bytes != 30000 {
		t.Fatalf("an inline file of 30000 bytes counts %d bytes", after.Bytes-before.Bytes)
	}
	if _, err := c.SetQuota(ctx, rpc.QuotaUser, uid, after.Bytes+20000, 0); err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(ctx, "/q2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 15000)); err != nil {
		t.Fatalf("a write within the quota: %v", err)
	}
	_, err = f.WriteAt(make([]byte, 10000), 15000)
	if !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("an inline write past the byte quota: %v, want EDQUOT", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readInline(ctx, t, c, "/q2"); len(got) != 15000 {
		t.Fatalf("the refused write changed the file: %d bytes", len(got))
	}
}

// TestInlineCapabilityExpiry: a handle whose capability expired writes an
// inline file again with a fresh one, as it does to data servers.
func TestInlineCapabilityExpiry(t *testing.T) {
	cl := testcluster.Start(t, 2, testcluster.WithMDSConfig(func(c *mds.Config) {
		c.InlineMax = 64 << 10
		c.CapabilityTTL = time.Second
	}))
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	f, err := c.Create(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("before ")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past the capability's expiry
	if _, err := f.Write([]byte("after")); err != nil {
		t.Fatalf("inline write with an expired capability: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readInline(ctx, t, c, "/f"); string(got) != "before after" {
		t.Fatalf("read %q", got)
	}
}

// TestInlineTwoWriters: two handles write one inline file; when one moves
// it to the data servers, the other's next write finds out and goes there
// too, and every byte both wrote is read back.
func TestInlineTwoWriters(t *testing.T) {
	cl := inlineCluster(t, 2)
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	writeInline(ctx, t, c, "/f", nil)
	a, err := c.OpenFile(ctx, "/f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cl.Client().OpenFile(ctx, "/f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("from a, inline"), 0); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 100<<10)
	if _, err := b.WriteAt(big, 1000); err != nil { // past the threshold: moves the file
		t.Fatal(err)
	}
	// Within the threshold, but the file is no longer inline.
	if _, err := a.WriteAt([]byte("A2"), 20); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("from a, on the data servers"), 200<<10); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*client.File{a, b} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]byte, 200<<10+len("from a, on the data servers"))
	copy(want, "from a, inline")
	copy(want[20:], "A2")
	copy(want[1000:], big)
	copy(want[200<<10:], "from a, on the data servers")
	if got := readInline(ctx, t, c, "/f"); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d both handles wrote", len(got), len(want))
	}
}

// TestInlineBudget: past the MDS's inline budget, a growing inline file
// moves to the data servers and new files are made there; those within it
// stay in the MDS.
func TestInlineBudget(t *testing.T) {
	cl := testcluster.Start(t, 2, testcluster.WithMDSConfig(func(c *mds.Config) {
		c.InlineMax = 64 << 10
		c.InlineBudget = 100 << 10
	}))
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("budget.."), 5<<10) // 40 KiB
	for _, name := range []string{"/a", "/b", "/c", "/d"} {
		writeInline(ctx, t, c, name, data)
	}
	for i := range cl.NumDS() {
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"/a", "/b"} {
		if got := readInline(ctx, t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("%s within the budget: read %d bytes, want the %d written", name, len(got), len(data))
		}
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, name := range []string{"/c", "/d"} {
		if f, err := c.Open(short, name); err == nil {
			_, err = io.ReadAll(f)
			f.Close()
			if err == nil {
				t.Fatalf("%s past the inline budget reads with every data server down: it is inline", name)
			}
		}
	}
}

// TestInlineCloseNoReturn: a writer of a file that stays inline closes
// with no MDS call (the MDS did not count its grant: nothing to return),
// whether it opened the file with its create (CreateInoPlus, as the mount
// does) or after; a writer whose file grows onto the data servers while
// it is open is counted then and returns its layout at close, and every
// byte reads back.
func TestInlineCloseNoReturn(t *testing.T) {
	cl := inlineCluster(t, 4)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	returns := func() int { return cl.MDSOps()["layoutreturn"] }
	data := bytes.Repeat([]byte("small file "), 300)

	before := returns()
	writeInline(ctx, t, c, "/a", data)
	cr, err := c.CreateInoPlus(ctx, rpc.RootIno, "b", 0o644, c.Cred(), true, true)
	if err != nil || cr.File == nil {
		t.Fatalf("create plus: %v (opened %v)", err, cr != nil && cr.File != nil)
	}
	if _, err := cr.File.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := cr.File.Close(); err != nil {
		t.Fatal(err)
	}
	if n := returns() - before; n != 0 {
		t.Fatalf("closing two inline files' writers made %d LAYOUTRETURN calls, want 0", n)
	}
	for _, name := range []string{"/a", "/b"} {
		if got := readInline(ctx, t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes, not the %d written", name, len(got), len(data))
		}
	}

	// Grown past the threshold while open: the writer's grant is counted
	// once the file is on the data servers, and returned at close.
	f, err := c.OpenFile(ctx, "/a", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("grown "), 30000)
	if _, err := f.WriteAt(big, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	before = returns()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := returns() - before; n != 1 {
		t.Fatalf("closing the writer of a file that left the MDS made %d LAYOUTRETURN calls, want 1", n)
	}
	if got := readInline(ctx, t, c, "/a"); !bytes.Equal(got, append(bytes.Clone(data), big...)) {
		t.Fatalf("grown file: read back %d bytes, want %d", len(got), len(data)+len(big))
	}
}
