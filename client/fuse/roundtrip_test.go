package fuse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// mdsOps returns the MDS's call counters by operation.
func mdsOps(t *testing.T, cl *testcluster.Cluster) map[string]int {
	t.Helper()
	return cl.MDSOps()
}

// namespaceOps are the MDS operations a metadata workload on the mount
// may cause; heartbeats and session renewals are not the mount's.
var namespaceOps = []string{
	"lookup", "walk", "getattr", "setattr", "create", "mkdir", "unlink", "rmdir", "rename",
	"create.plus", "mkdir.plus", "unlink.plus", "rmdir.plus",
	"readdir", "getxattr", "layoutget", "layoutcommit", "layoutreturn", "lockget", "lockset", "lockrelease",
	"quota.room", "inline.write", "inline.spill",
}

// TestMetadataRoundTrips: the MDS calls the kernel's requests for a
// create, mkdir, unlink and rmdir through the mount cost, counted at the
// MDS. Each operation is one call that changes the namespace (a plus
// call, answered with the directory's attributes, which the kernel asks
// for after every change: the mount answers that getattr); the kernel's
// lookups of the new names are answered by the MDS only until the mount
// has listed the directory (statahead), then from the listing; opening
// and closing a new empty file costs no MDS call (no layout fetched,
// nothing committed or returned).
func TestMetadataRoundTrips(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 4)
	// Caches that do not expire during the test: on a loaded machine the
	// loop may take longer than the default second, and the kernel would
	// look up the directory again.
	opts := DefaultOptions()
	opts.AttrTimeout, opts.EntryTimeout = time.Hour, time.Hour
	s := mountCluster(t, cl, opts)
	dir := filepath.Join(s.Dir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	listed(t, s, dir)
	const n = 20
	steps := []struct {
		name, op string // op is the one namespace change per entry
		run      func(i int) error
	}{
		{"create and close", "create", func(i int) error {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint("f", i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}},
		{"mkdir", "mkdir", func(i int) error { return os.Mkdir(filepath.Join(dir, fmt.Sprint("d", i)), 0o755) }},
		{"unlink", "unlink", func(i int) error { return os.Remove(filepath.Join(dir, fmt.Sprint("f", i))) }},
		{"rmdir", "rmdir", func(i int) error { return os.Remove(filepath.Join(dir, fmt.Sprint("d", i))) }},
	}
	for _, st := range steps {
		before := mdsOps(t, cl)
		for i := 0; i < n; i++ {
			if err := st.run(i); err != nil {
				t.Fatalf("%s %d: %v", st.name, i, err)
			}
		}
		after := mdsOps(t, cl)
		calls := map[string]int{}
		total := 0
		for _, op := range namespaceOps {
			if d := after[op] - before[op]; d != 0 {
				calls[op] = d
				total += d
			}
		}
		t.Logf("%s x%d: MDS calls %v", st.name, n, calls)
		if got := calls[st.op] + calls[st.op+".plus"]; got != n {
			t.Errorf("%s x%d: %d %s calls at the MDS, want %d", st.name, n, got, st.op, n)
		}
		if total > n {
			t.Errorf("%s x%d: %d MDS calls %v, want one per entry (the change; lookups answered from the listing)", st.name, n, total, calls)
		}
		for _, op := range []string{"layoutget", "layoutcommit", "layoutreturn", "setattr"} {
			if calls[op] != 0 {
				t.Errorf("%s x%d: %d %s calls at the MDS, want none", st.name, n, calls[op], op)
			}
		}
	}
}

// TestSmallFileRoundTrips: writing a small file through the mount
// (create, write, close) costs the MDS three calls: the create, which
// opens the file for writing too (layout, capability, quota room), the
// commit at close, and the return of the layout at release; with inline
// files two: the create and the write itself (nothing to commit, and the
// MDS did not count an inline file's writer: nothing to return). The
// directory's attributes come with the create. Reading it back (open, read, close)
// costs a layout, with the attributes the kernel asks for at open (and an
// inline file's bytes; os.ReadFile's fstat is answered with them), and
// nothing at the close: the MDS keeps no state
// for a read layout, so a reader returns none.
func TestSmallFileRoundTrips(t *testing.T) {
	requireFUSE(t)
	for _, tc := range []struct {
		name      string
		inlineMax int
		write     string // the call that makes the bytes durable
		returns   int    // LAYOUTRETURN calls of the writers
	}{
		{"inline off", 0, "layoutcommit", 10},
		{"inline", 64 << 10, "inline.write", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := testcluster.Start(t, 4, testcluster.WithMDSConfig(func(c *mds.Config) { c.InlineMax = tc.inlineMax }))
			smallFileRoundTrips(t, cl, tc.write, tc.returns)
		})
	}
}

func smallFileRoundTrips(t *testing.T, cl *testcluster.Cluster, write string, returns int) {
	opts := DefaultOptions()
	opts.AttrTimeout, opts.EntryTimeout = time.Hour, time.Hour
	s := mountCluster(t, cl, opts)
	dir := filepath.Join(s.Dir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	listed(t, s, dir)
	const n = 10
	data := []byte("four kilobytes would do as well")
	before := mdsOps(t, cl)
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The kernel sends RELEASE after close(2) returns: wait until the
	// mount has closed every file (and returned what it returns).
	deadline := time.Now().Add(time.Minute)
	for {
		s.fsys.mu.Lock()
		open := len(s.fsys.open)
		s.fsys.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files still open on the mount a minute after their close(2)", open)
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := mdsOps(t, cl)
	calls := map[string]int{}
	total := 0
	for _, op := range namespaceOps {
		if d := after[op] - before[op]; d != 0 {
			calls[op] = d
			total += d
		}
	}
	t.Logf("write x%d: MDS calls %v", n, calls)
	if calls["create"]+calls["create.plus"] != n || calls[write] != n || calls["layoutreturn"] != returns || total != 2*n+returns {
		t.Errorf("write x%d: MDS calls %v, want %d each of create and %s, %d layoutreturn and nothing else", n, calls, n, write, returns)
	}
	before = mdsOps(t, cl)
	for i := 0; i < n; i++ {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("f", i)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("f%d reads %q, want %q", i, got, data)
		}
	}
	after = mdsOps(t, cl)
	calls = map[string]int{}
	for _, op := range namespaceOps {
		if d := after[op] - before[op]; d != 0 {
			calls[op] = d
		}
	}
	t.Logf("read back x%d: MDS calls %v", n, calls)
	if calls["layoutreturn"] != 0 || calls["layoutcommit"] != 0 {
		t.Errorf("read back x%d: MDS calls %v, want no layout returned or committed by readers", n, calls)
	}
	if calls["layoutget"] != n {
		t.Errorf("read back x%d: %d layouts fetched, want one per open (close-to-open)", n, calls["layoutget"])
	}
	if calls["getattr"] != 0 {
		t.Errorf("read back x%d: %d getattr calls, want none (the fstat after an open is answered with the open's attributes)", n, calls["getattr"])
	}
}

// listed makes the mount list directory dir (statahead: the kernel looks
// up new names first, and enough lookups start a listing) and waits, a
// minute at most, until the listing is in.
func listed(t *testing.T, s *Server, dir string) {
	t.Helper()
	for i := 0; i < stataheadAfter; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprint("none", i))); !os.IsNotExist(err) {
			t.Fatalf("stat of a name never made: %v", err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	dc := s.fsys.dc
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, known := dc.lookup(st.Ino, "none"); known == absent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mount did not list %s within a minute", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
