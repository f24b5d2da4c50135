package fuse

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestOpenAttrs: the fstat after an open is answered with the attributes
// the open fetched, but never once a change through the mount may have
// changed them: a chmod, a truncate, a new link, a write through another
// descriptor each show at the next fstat of the open descriptor.
func TestOpenAttrs(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 4)
	opts := DefaultOptions()
	opts.AttrTimeout, opts.EntryTimeout = time.Hour, time.Hour
	s := mountCluster(t, cl, opts)
	p := filepath.Join(s.Dir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stat := func(what string) *syscall.Stat_t {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatalf("fstat %s: %v", what, err)
		}
		return &st
	}
	opened := stat("after the open")
	if opened.Size != 5 || opened.Mode&0o777 != 0o644 || opened.Nlink != 1 {
		t.Fatalf("after the open: size %d mode %o links %d, want 5, 644, 1", opened.Size, opened.Mode&0o777, opened.Nlink)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := stat("after chmod"); st.Mode&0o777 != 0o600 {
		t.Fatalf("after chmod 600: mode %o", st.Mode&0o777)
	}
	if err := os.Link(p, p+".2"); err != nil {
		t.Fatal(err)
	}
	if st := stat("after link"); st.Nlink != 2 {
		t.Fatalf("after a second link: %d links", st.Nlink)
	}
	if err := os.Truncate(p, 3); err != nil {
		t.Fatal(err)
	}
	cut := stat("after truncate")
	if cut.Size != 3 {
		t.Fatalf("after truncate to 3: size %d", cut.Size)
	}
	time.Sleep(10 * time.Millisecond) // so that the append's mtime differs
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(" and more")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The write made the kernel drop its copy: this fstat is the mount's
	// to answer, and everything changed since the open shows.
	if st := stat("after a write elsewhere"); st.Size != 12 || st.Mode&0o777 != 0o600 || st.Nlink != 2 || st.Mtim == cut.Mtim {
		t.Fatalf("after chmod 600, a link, a truncate and an append of 9 bytes through another descriptor: size %d mode %o links %d mtime %v (before the append %v)",
			st.Size, st.Mode&0o777, st.Nlink, st.Mtim, cut.Mtim)
	}
}
