package fuse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	if _, _, ok := dc.lookup(d.Ino, "f3"); ok {
		t.Fatal("answered before any listing")
	}
	for i := 0; i < stataheadAfter; i++ {
		dc.found(d.Ino)
	}
	fsys.bg.Wait()
	a, left, ok := dc.lookup(d.Ino, "f3")
	if !ok || a.Size != 3 || left <= 0 || left > time.Second {
		t.Fatalf("after the listing: %+v %v %v", a, left, ok)
	}
	if _, _, ok := dc.lookup(d.Ino, "nope"); ok {
		t.Error("a name not in the listing was answered")
	}
	dc.changed()
	if _, _, ok := dc.lookup(d.Ino, "f3"); ok {
		t.Error("answered from a listing made before a change")
	}
	// A listing expires with the entry timeout.
	for i := 0; i < stataheadAfter; i++ {
		dc.found(d.Ino)
	}
	fsys.bg.Wait()
	if _, _, ok := dc.lookup(d.Ino, "f3"); !ok {
		t.Fatal("no listing after a second burst")
	}
	time.Sleep(DefaultOptions().EntryTimeout + 10*time.Millisecond)
	if _, _, ok := dc.lookup(d.Ino, "f3"); ok {
		t.Error("answered from an expired listing")
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
