package mds_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/localcluster"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/layout"
)

// Tests of failure handling on a real in-process cluster: rebuild after a
// data server is lost, scrub repair, drain, and a rebuild that outlives
// its leader. Every wait is a poll with a generous deadline.

// fastRepair makes the MDS rebuild soon after a data server goes down and
// collect strays soon after a swap.
func fastRepair(c *mds.Config) {
	c.RebuildDelay = time.Second
	c.CapabilityTTL = 3 * time.Second
}

// put creates name with layout spec and content data and returns its
// layout and inode.
func put(t *testing.T, ctx context.Context, c *client.Client, name, spec string, data []byte) (layout.Layout, uint64) {
	t.Helper()
	f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, spec)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	// In pieces: each write must finish within a capability's lifetime
	// (fastRepair's is short), which a loaded machine stretches.
	const piece = 2 << 20
	for off := 0; off < len(data); off += piece {
		if _, err := f.WriteAt(data[off:min(off+piece, len(data))], int64(off)); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close %s: %v", name, err)
	}
	return f.Layout(), f.Ino()
}

// get reads name whole through a fresh open.
func get(ctx context.Context, c *client.Client, name string) ([]byte, error) {
	f, err := c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.NewSectionReader(f, 0, f.Size()))
	return b.Bytes(), err
}

func mustGet(t *testing.T, ctx context.Context, c *client.Client, name string, want []byte) {
	t.Helper()
	got, err := get(ctx, c, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %s: %d bytes differ from the %d written", name, len(got), len(want))
	}
}

// freshClient is a client with no connections kept to restarted servers.
func freshClient(t *testing.T, cl *testcluster.Cluster) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.MDS = cl.MDSAddr()
	cfg.Auth = cl.Credentials()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func random(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x51))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func dsIndex(t *testing.T, cl *testcluster.Cluster, id string) int {
	t.Helper()
	for i := 0; i < cl.NumDS(); i++ {
		if localcluster.DSID(i) == id {
			return i
		}
	}
	t.Fatalf("no data server %q", id)
	return -1
}

// poll calls cond every 50ms until it returns "" or ctx ends; then it
// fails with cond's last answer.
func poll(t *testing.T, ctx context.Context, what string, cond func() string) {
	t.Helper()
	for {
		why := cond()
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %s", what, why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// healthy says why the files are not healthy: stale components, or
// components on a data server in avoid.
func healthy(ctx context.Context, c *client.Client, names []string, avoid ...string) string {
	for _, name := range names {
		info, err := c.GetLayout(ctx, name)
		if err != nil {
			return err.Error()
		}
		if len(info.Stale) > 0 {
			return fmt.Sprintf("%s has stale components %v", name, info.Stale)
		}
		for _, id := range avoid {
			if slices.Contains(info.Layout.Targets, id) {
				return fmt.Sprintf("%s still has a component on %s (%v)", name, id, info.Layout.Targets)
			}
		}
	}
	return ""
}

// TestRebuildAfterDataServerLoss: a data server holding components of an
// rs:4+2 and a mirror:2 file is stopped for good; after RebuildDelay the
// MDS rebuilds its components on other data servers (on nodes the files
// do not use) and the files read back right, from the rebuilt components
// too. A none file on it cannot be rebuilt (the rebuild status says so)
// and reads fail, never wrong; once the server is back it reads right and
// the displaced copies are collected.
func TestRebuildAfterDataServerLoss(t *testing.T) {
	cl := testcluster.Start(t, 8, testcluster.WithMDSConfig(fastRepair))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	rsData, mirData, noneData := random(1, 3<<20+4321), random(2, 2<<20+17), random(3, 1<<20+5)
	rs, rsIno := put(t, ctx, c, "/rs", "unit=64K,scheme=rs:4+2", rsData)
	victim := rs.Targets[1]
	// A mirror and a none file with a component on the victim.
	var mir layout.Layout
	for i := 0; ; i++ {
		name := fmt.Sprintf("/mirror%d", i)
		if mir, _ = put(t, ctx, c, name, "width=2,unit=64K,scheme=mirror:2", mirData); slices.Contains(mir.Targets, victim) {
			if err := c.Rename(ctx, name, "/mirror"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	var none layout.Layout
	for i := 0; ; i++ {
		name := fmt.Sprintf("/none%d", i)
		if none, _ = put(t, ctx, c, name, "width=2,unit=64K,scheme=none", noneData); slices.Contains(none.Targets, victim) {
			if err := c.Rename(ctx, name, "/none"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	vi := dsIndex(t, cl, victim)
	oldPath := cl.DS(vi).ComponentPath(rpc.ComponentID{Ino: rsIno, Gen: rs.Generation, Col: 1})
	if err := cl.StopDS(vi); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "rebuild after losing "+victim, func() string { return healthy(ctx, c, []string{"/rs", "/mirror"}, victim) })
	info, _ := c.GetLayout(ctx, "/rs")
	nodes := map[string]bool{}
	for _, id := range info.Layout.Targets {
		nodes[id] = true
	}
	if len(nodes) != 6 {
		t.Fatalf("rebuilt rs:4+2 layout %v puts two components on one node", info.Layout.Targets)
	}
	r := freshClient(t, cl)
	mustGet(t, ctx, r, "/rs", rsData)
	mustGet(t, ctx, r, "/mirror", mirData)
	// The rebuilt component alone with a parity: stop two other data
	// servers of the rs file; column 1 comes from the rebuilt one.
	stopA, stopB := dsIndex(t, cl, info.Layout.Targets[0]), dsIndex(t, cl, info.Layout.Targets[4])
	for _, i := range []int{stopA, stopB} {
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, ctx, freshClient(t, cl), "/rs", rsData)
	for _, i := range []int{stopA, stopB} {
		if err := cl.StartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := get(ctx, r, "/none"); err == nil {
		t.Fatal("a none file with a component on a stopped data server read without error")
	}
	st, err := c.RebuildStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done < 2 || st.Unrecovered < 1 {
		t.Errorf("rebuild status %+v: want at least 2 done and the none component unrecovered", st)
	}
	if err := cl.StartDS(ctx, vi); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "none file readable once its server is back", func() string {
		got, err := get(ctx, freshClient(t, cl), "/none")
		switch {
		case err != nil:
			return err.Error()
		case !bytes.Equal(got, noneData):
			t.Fatal("the none file read wrong bytes")
		}
		return ""
	})
	poll(t, ctx, "the displaced rs component is collected", func() string {
		if _, err := os.Stat(oldPath); err == nil {
			return oldPath + " still exists"
		}
		return ""
	})
}

// TestScrubRepairsBlocks: bits flipped in stored blocks of rs:4+2 (data
// and parity) and mirror:2 files are found by `scrub start` and rewritten
// from redundancy: the bytes on disk are the original ones again and the
// files read right. The flipped block of a none file is reported as
// unrecoverable (scrub status, metric), and its read fails with EIO,
// never returning the corrupt bytes.
func TestScrubRepairsBlocks(t *testing.T) {
	cl := testcluster.Start(t, 6, testcluster.WithDSConfig(func(c *ds.Config) { c.ScrubRate = -1 }))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	rsData, mirData, noneData := random(4, 2<<20+999), random(5, 1<<20+3), random(6, 1<<20)
	rs, rsIno := put(t, ctx, c, "/rs", "unit=64K,scheme=rs:4+2", rsData)
	mir, mirIno := put(t, ctx, c, "/mirror", "width=2,unit=64K,scheme=mirror:2", mirData)
	none, noneIno := put(t, ctx, c, "/none", "width=2,unit=64K,scheme=none", noneData)
	type flip struct {
		path string
		off  int64
		orig byte
	}
	var flips []flip
	doFlip := func(l layout.Layout, ino uint64, comp int, off int64) flip {
		path := cl.DS(dsIndex(t, cl, l.Targets[comp])).ComponentPath(rpc.ComponentID{Ino: ino, Gen: l.Generation, Col: uint32(comp)})
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		b := make([]byte, 1)
		if _, err := fh.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		f := flip{path: path, off: off, orig: b[0]}
		b[0] ^= 0x40
		if _, err := fh.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		return f
	}
	flips = append(flips,
		doFlip(rs, rsIno, 2, 64<<10+100),   // row 1, data column 2
		doFlip(rs, rsIno, 5, 3*64<<10+7),   // row 3, parity 1
		doFlip(mir, mirIno, 1, 5*64<<10+1), // copy 0 of column 1
		doFlip(mir, mirIno, 2, 2*64<<10+9), // copy 1 of column 0
	)
	lost := doFlip(none, noneIno, 0, 64<<10+3) // file bytes [128K, 192K)
	if _, err := c.ScrubStart(ctx); err != nil {
		t.Fatal(err)
	}
	var st *rpc.ScrubStatusResp
	poll(t, ctx, "scrub finds and repairs the blocks", func() string {
		var err error
		if st, err = c.ScrubStatus(ctx); err != nil {
			return err.Error()
		}
		for _, d := range st.DataSvrs {
			if d.Passes < 1 || d.State != "idle" {
				return fmt.Sprintf("%s: %d passes, %s", d.ID, d.Passes, d.State)
			}
		}
		if len(st.Repairing) > 0 || len(st.Unrecoverable) != 1 {
			return fmt.Sprintf("%d being repaired, %d unrecoverable", len(st.Repairing), len(st.Unrecoverable))
		}
		return ""
	})
	if u := st.Unrecoverable[0]; u.Ino != noneIno || u.Col != 0 || u.Path != "/none" || len(u.Blocks) != 1 || u.Blocks[0] != 1 {
		t.Errorf("unrecoverable %+v, want block 1 of column 0 of /none", u)
	}
	for _, f := range flips {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if b[f.off] != f.orig {
			t.Errorf("%s byte %d: %#x after scrub, want the original %#x", f.path, f.off, b[f.off], f.orig)
		}
	}
	r := freshClient(t, cl)
	mustGet(t, ctx, r, "/rs", rsData)
	mustGet(t, ctx, r, "/mirror", mirData)
	f, err := r.Open(ctx, "/none")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 64<<10)
	if n, err := f.ReadAt(p, 128<<10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of the corrupt none block: %d bytes, %v; want EIO", n, err)
	}
	if _, err := f.ReadAt(p, 64<<10); err != nil || !bytes.Equal(p, noneData[64<<10:128<<10]) {
		t.Fatalf("read of an intact none block: %v", err)
	}
	var m bytes.Buffer
	if err := cl.MDS().WriteMetrics(&m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"strata_mds_unrecoverable_blocks 1\n", "strata_mds_damaged_blocks 1\n", "strata_mds_repaired_blocks_total 4\n"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	_ = lost
}

// TestDrain: draining a data server moves every component off it (files
// read right, nothing is placed on it any more, ds list shows it drained);
// draining one whose data has nowhere to go is refused with the reason.
func TestDrain(t *testing.T) {
	cl := testcluster.Start(t, 7, testcluster.WithMDSConfig(fastRepair))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	files := map[string][]byte{}
	for i, spec := range []string{"unit=64K,scheme=rs:4+2", "width=3,unit=64K,scheme=mirror:2", "width=4,unit=64K,scheme=none"} {
		name := fmt.Sprintf("/f%d", i)
		files[name] = random(uint64(10+i), 1<<20+i*777)
		put(t, ctx, c, name, spec, files[name])
	}
	if _, err := c.DrainDS(ctx, "ds99", false); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("drain of an unknown data server: %v", err)
	}
	if _, err := c.DrainDS(ctx, "ds3", false); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	poll(t, ctx, "drain of ds3", func() string { return healthy(ctx, c, names, "ds3") })
	list, err := c.ListDS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list.DataSvrs {
		if d.Info.ID == "ds3" && (!d.Draining || d.Components != 0) {
			t.Errorf("ds3 after the drain: %+v", d)
		}
	}
	for n, want := range files {
		mustGet(t, ctx, c, n, want)
	}
	l, _ := put(t, ctx, c, "/new", "width=6,unit=64K", []byte("not on ds3"))
	if slices.Contains(l.Targets, "ds3") {
		t.Errorf("a new file was placed on the draining ds3: %v", l.Targets)
	}
	// rs:4+2 needs 6 nodes; with ds3 draining, 6 remain: draining another
	// data server of the rs file leaves its component nowhere to go.
	info, _ := c.GetLayout(ctx, "/f0")
	_, err = c.DrainDS(ctx, info.Layout.Targets[0], false)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nowhere to go") || !strings.Contains(err.Error(), "rs:4+2") {
		t.Fatalf("drain of a second data server of an rs:4+2 file on 7 nodes: %v; want ENOSPC naming the file's layout", err)
	}
	if _, err := c.DrainDS(ctx, "ds3", true); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildResumesAfterFailover: a slow rebuild (a low rate) is under way
// when the MDS leader is killed; the new leader finds the work in the FSM
// and finishes it from the copy's last checkpoint, not from the start.
func TestRebuildResumesAfterFailover(t *testing.T) {
	const comp = 8 << 20 // 4 windows, seconds at 1 MiB/s
	cl := testcluster.Start(t, 7, testcluster.WithMDS(3), testcluster.WithMDSConfig(func(c *mds.Config) {
		fastRepair(c)
		c.RebuildRate = 1 << 20
		// The product's raft timeout, not the tests' 50ms: under -race on
		// two cores the instrumented Reed-Solomon decode delays raft
		// heartbeats past 50ms, and the elections it causes every few
		// seconds are not the one failover this test is about.
		c.RaftTimeout = 500 * time.Millisecond
	}))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	data := random(7, 4*comp)
	rs, _ := put(t, ctx, c, "/big", "unit=256K,scheme=rs:4+2", data)
	victim := rs.Targets[2]
	if err := cl.StopDS(dsIndex(t, cl, victim)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "half the component is copied", func() string {
		st, err := c.RebuildStatus(ctx)
		if err != nil {
			return err.Error()
		}
		for _, tk := range st.Tasks {
			if tk.Bytes >= comp/2 {
				return ""
			}
		}
		return fmt.Sprintf("%+v", st)
	})
	leader := cl.WaitLeader()
	if err := cl.StopMDSReplica(leader); err != nil {
		t.Fatal(err)
	}
	var last *rpc.RebuildStatusResp
	poll(t, ctx, "the new leader finishes the rebuild", func() string {
		msg := healthy(ctx, c, []string{"/big"}, victim)
		st, err := c.RebuildStatus(ctx)
		if err == nil && st.Done > 0 {
			last = st
		}
		if msg != "" {
			msg += fmt.Sprintf("; rebuild status %+v %v", st, err)
		}
		return msg
	})
	// The leader that finished copied what was left after the checkpoint,
	// not the whole component again.
	switch {
	case last == nil:
		t.Error("no leader reported the rebuild done (rebuild status Done > 0) when the file became healthy")
	case last.BytesDone >= comp:
		t.Errorf("the new leader copied %d bytes of an %d-byte component: it started over instead of resuming", last.BytesDone, comp)
	}
	mustGet(t, ctx, freshClient(t, cl), "/big", data)
	if err := cl.StartMDSReplica(ctx, leader); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFailsBeyondRedundancy: a write that fails on more components
// than the scheme can lose fails with EIO and marks nothing stale (the
// MDS refuses a mark that would leave the file unreadable).
func TestWriteFailsBeyondRedundancy(t *testing.T) {
	cl := testcluster.Start(t, 6, testcluster.WithMDSConfig(fastRepair))
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	old := random(8, 1<<20)
	rs, _ := put(t, ctx, c, "/rs", "unit=64K,scheme=rs:4+2", old)
	var stopped []int
	for _, comp := range []int{0, 1, 4} {
		i := dsIndex(t, cl, rs.Targets[comp])
		if err := cl.StopDS(i); err != nil {
			t.Fatal(err)
		}
		stopped = append(stopped, i)
	}
	w := freshClient(t, cl)
	f, err := w.OpenFile(ctx, "/rs", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(random(9, 256<<10), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write with 3 of 6 components down: %v, want EIO", err)
	}
	_ = f.Close()
	for _, i := range stopped {
		if err := cl.StartDS(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if why := healthy(ctx, c, []string{"/rs"}); why != "" {
		t.Fatalf("after a refused write: %s", why)
	}
}
