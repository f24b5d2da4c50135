package fuse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestStatahead: after a burst of lookups in a directory, names are
// answered from one listing while it is fresh, and any change made
// through the mount makes it stale.
func TestStatahead(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := context.Background()
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		f, err := c.Create(ctx, fmt.Sprintf("/d/f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, i)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := c.Stat(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	fsys := newFileSystem(ctx, c, DefaultOptions().withDefaults())
	dc := fsys.dc
	if _, _, known := dc.lookup(d.Ino, "f3"); known != unknown {
		t.Fatal("answered before any listing")
	}
	for i := 0; i < stataheadAfter; i++ {
		dc.asked(d.Ino)
	}
	fsys.bg.Wait()
	a, left, known := dc.lookup(d.Ino, "f3")
	if known != present || a.Size != 3 || left <= 0 || left > time.Second {
		t.Fatalf("after the listing: %+v %v %v", a, left, known)
	}
	if _, left, known := dc.lookup(d.Ino, "nope"); known != absent || left <= 0 || left > time.Second {
		t.Errorf("a name not in a fresh listing: %v for %v, want absent", known, left)
	}
	// The mount's own changes to the names are applied to the listing.
	dc.changed()
	dc.removed(d.Ino, "f4")
	dc.added(d.Ino, "new", &rpc.Attr{Ino: 999, Size: 5})
	if _, _, known := dc.lookup(d.Ino, "f3"); known != unknown {
		t.Error("attributes answered from a listing made before a change")
	}
	if _, _, known := dc.lookup(d.Ino, "nope"); known != absent {
		t.Error("names forgotten at an attribute change")
	}
	if _, _, known := dc.lookup(d.Ino, "f4"); known != absent {
		t.Error("a name removed through the mount is still listed")
	}
	if a, _, known := dc.lookup(d.Ino, "new"); known != present || a.Ino != 999 {
		t.Errorf("a name made through the mount: %v %+v", known, a)
	}
	// A change the mount cannot apply drops the names.
	dc.unsure(d.Ino)
	if _, _, known := dc.lookup(d.Ino, "nope"); known != unknown {
		t.Error("answered after an unsure change")
	}
	// A listing expires with the entry timeout.
	for i := 0; i < stataheadAfter; i++ {
		dc.asked(d.Ino)
	}
	fsys.bg.Wait()
	if _, _, known := dc.lookup(d.Ino, "f3"); known != present {
		t.Fatal("no listing after a second burst")
	}
	time.Sleep(DefaultOptions().EntryTimeout + 10*time.Millisecond)
	if _, _, known := dc.lookup(d.Ino, "f3"); known != unknown {
		t.Error("answered from an expired listing")
	}
	if _, _, known := dc.lookup(d.Ino, "nope"); known != unknown {
		t.Error("a name answered absent from an expired listing")
	}
}

// TestStataheadJournal: a change the mount makes while a listing is
// being fetched is applied to the listing when it comes, whether or not
// the MDS listed it.
func TestStataheadJournal(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := context.Background()
	a, err := c.MkdirIno(ctx, rpc.RootIno, "d", 0o755, c.Cred())
	if err != nil {
		t.Fatal(err)
	}
	d := a.Ino
	dc := newFileSystem(ctx, c, DefaultOptions().withDefaults()).dc
	// A listing whose fetch is under way, as asked would start it.
	l := &listing{window: time.Now(), loading: true}
	dc.mu.Lock()
	dc.dirs[d] = l
	dc.mu.Unlock()
	dc.added(d, "made", &rpc.Attr{Ino: 77})
	dc.removed(d, "old")
	dc.load(d, l, time.Now(), dc.epoch.Load())
	if _, _, known := dc.lookup(d, "made"); known != present {
		t.Errorf("a name made while listing: %v, want present", known)
	}
	if _, _, known := dc.lookup(d, "other"); known != absent {
		t.Errorf("a name never made: %v, want absent", known)
	}
	// One the mount cannot apply spoils the listing under way.
	l = &listing{window: time.Now(), loading: true}
	dc.mu.Lock()
	dc.dirs[d] = l
	dc.mu.Unlock()
	dc.unsure(d)
	dc.load(d, l, time.Now(), dc.epoch.Load())
	if _, _, known := dc.lookup(d, "other"); known != unknown {
		t.Errorf("after a listing spoiled while made: %v, want unknown", known)
	}
}

// TestStataheadWaits: a lookup the listing being fetched will answer
// waits for it instead of asking the MDS, and is answered from it.
func TestStataheadWaits(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := context.Background()
	a, err := c.MkdirIno(ctx, rpc.RootIno, "d", 0o755, c.Cred())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MkdirIno(ctx, a.Ino, "sub", 0o755, c.Cred()); err != nil {
		t.Fatal(err)
	}
	fsys := newFileSystem(ctx, c, DefaultOptions().withDefaults())
	dir := &node{fsys: fsys} // the node of inode 0: its listing is set below
	// A listing whose fetch is under way, as asked would start it.
	l := &listing{window: time.Now(), loading: true, ready: make(chan struct{})}
	fsys.dc.mu.Lock()
	fsys.dc.dirs[0] = l
	fsys.dc.mu.Unlock()
	before := cl.MDSOps()["lookup"]
	done := make(chan syscall.Errno, 1)
	go func() {
		_, errno := dir.Lookup(ctx, "sub", &gofuse.EntryOut{})
		done <- errno
	}()
	// The fetch comes back with d's entries, in which "sub" is missing:
	// the lookup that waited answers ENOENT from it; one that did not
	// wait asked the MDS (and found sub, or no inode 0).
	select {
	case errno := <-done:
		t.Fatalf("the lookup answered (%v) before the listing came", errno)
	case <-time.After(200 * time.Millisecond):
	}
	ents, _, err := c.ReadDirPage(ctx, a.Ino, "", stataheadMax)
	if err != nil {
		t.Fatal(err)
	}
	fsys.dc.mu.Lock()
	l.loading, l.made, l.ents = false, time.Now(), map[string]dentry{}
	for _, e := range ents {
		if e.Name != "sub" {
			l.ents[e.Name] = dentry{attr: e.Attr, epoch: fsys.dc.epoch.Load()}
		}
	}
	close(l.ready)
	l.ready = nil
	fsys.dc.mu.Unlock()
	if errno := <-done; errno != syscall.ENOENT {
		t.Errorf("lookup while the listing loaded: %v, want ENOENT from the listing", errno)
	}
	if n := cl.MDSOps()["lookup"] - before; n != 0 {
		t.Errorf("the lookup made while the listing loaded asked the MDS %d times", n)
	}
}

// TestStatStorm: stat of many files whose cache expired, through the
// mount, shows what the MDS has, and a file written and closed through
// the mount right after shows its new size.
func TestStatStorm(t *testing.T) {
	cl, s := startMount(t, 2)
	c := cl.Client()
	dir := filepath.Join(s.Dir(), "many")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), make([]byte, i), 0o600+os.FileMode(i%8)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(DefaultOptions().EntryTimeout + 50*time.Millisecond)
	check := func() {
		t.Helper()
		for i := 0; i < n; i++ {
			fi, err := os.Stat(filepath.Join(dir, fmt.Sprint(i)))
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Stat(context.Background(), fmt.Sprintf("/many/%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != int64(a.Size) || uint32(fi.Mode().Perm()) != a.Mode&0o777 {
				t.Fatalf("file %d: mount shows size %d mode %o, MDS %d %o", i, fi.Size(), fi.Mode().Perm(), a.Size, a.Mode&0o777)
			}
		}
	}
	check()
	p := filepath.Join(dir, "7")
	if err := os.WriteFile(p, make([]byte, 7777), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 7777 {
		t.Fatalf("after a write through the mount: %v %v", fi.Size(), err)
	}
	if err := os.Remove(filepath.Join(dir, "8")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "8")); !os.IsNotExist(err) {
		t.Fatalf("after unlink through the mount: %v", err)
	}
}

// TestNegativeLookups: once the mount has listed a directory, a name it
// does not hold is answered "no such file" without asking the MDS, for no
// longer than the entry timeout: a name another client makes appears
// through the mount, one it removes disappears, and names made and
// removed through the mount are seen at once.
func TestNegativeLookups(t *testing.T) {
	cl := testcluster.Start(t, 2)
	// Caches that do not expire while the calls are counted, however
	// slow the machine; the second mount has the default second.
	opts := DefaultOptions()
	opts.AttrTimeout, opts.EntryTimeout = time.Hour, time.Hour
	s := mountCluster(t, cl, opts)
	short := mountCluster(t, cl, DefaultOptions())
	c := cl.Client()
	ctx := context.Background()
	dir := filepath.Join(s.Dir(), "neg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 3 * stataheadAfter
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listed(t, s, dir)
	before := mdsOps(t, cl)
	for i := 0; i < n; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("missing", i))); !os.IsNotExist(err) {
			t.Fatalf("stat of a name never made: %v, want ENOENT", err)
		}
	}
	if got := mdsOps(t, cl)["lookup"] - before["lookup"]; got != 0 {
		t.Errorf("%d names never made cost %d lookups at the MDS, want them answered from the listing", n, got)
	}
	// Made and removed through the mount: seen at once.
	p := filepath.Join(dir, "mine")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("stat of a file just made through the mount: %v", err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("stat of a file just removed through the mount: %v, want ENOENT", err)
	}
	// Made and removed by another client: seen within the entry timeout
	// (waited for with a generous deadline; this asserts no timing).
	dir = filepath.Join(short.Dir(), "neg")
	listed(t, short, dir)
	if _, err := os.Stat(filepath.Join(dir, "theirs")); !os.IsNotExist(err) {
		t.Fatalf("stat of a name not made yet: %v", err)
	}
	f, err := c.Create(ctx, "/neg/theirs")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitStat(t, filepath.Join(dir, "theirs"), true)
	if err := c.Remove(ctx, "/neg/f1"); err != nil {
		t.Fatal(err)
	}
	waitStat(t, filepath.Join(dir, "f1"), false)
}

// waitStat waits until p exists (or, with !exists, is gone) through the
// mount; a minute is far past any cache timeout.
func waitStat(t *testing.T, p string, exists bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := os.Stat(p)
		switch {
		case exists && err == nil, !exists && os.IsNotExist(err):
			return
		case err != nil && !os.IsNotExist(err):
			t.Fatalf("stat %s: %v", p, err)
		case time.Now().After(deadline):
			t.Fatalf("stat %s: %v a minute after another client changed it", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
