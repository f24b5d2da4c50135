package fuse

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestEndingMountSparesItsNumbersNextMount: the kernel gives the number of
// a FUSE connection that has ended (the minor of its anonymous device) to
// the next mount at once, lowest free first, often another test's or job's.
// A mount still ending then (requests in flight retrying the MDS, the write
// back of files left open) must not take that connection for its own: its
// watcher saw the number still listed in fusectl and, the mount point
// being empty, aborted it, and the other mount's applications got
// ENOTCONN (TestReadAheadLongSequential failed so in a loaded full run).
// Here mount A ends; mount B then has a number; A's Server, still ending,
// is given B's number, as the kernel does when the timing falls so (the
// one thing the test arranges: the kernel cannot be made to reuse a
// number on demand). A's watcher and its Abort must leave B working.
func TestEndingMountSparesItsNumbersNextMount(t *testing.T) {
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: aborting a FUSE connection needs root (fusectl): nothing was tested")
	}
	cl := testcluster.Start(t, 1)
	dirA := t.TempDir()
	opts := DefaultOptions()
	opts.Log = testLog()
	a, err := Mount(context.Background(), cl.Client(), dirA, opts)
	if err != nil {
		t.Fatalf("mount A: %v", err)
	}
	if !a.conn.known() {
		t.Fatalf("mount A: its FUSE connection is unknown (%+v)", a.conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Unmount(ctx, false); err != nil {
		t.Fatalf("unmount A: %v", err)
	}
	a.Wait()

	b := mountCluster(t, cl, DefaultOptions())
	want := bytes.Repeat([]byte("strata"), 1000)
	if err := os.WriteFile(filepath.Join(b.Dir(), "f"), want, 0o644); err != nil {
		t.Fatalf("write on B: %v", err)
	}
	t.Logf("A had connection %d, B has %d", a.conn.num, b.conn.num)

	// A's Server as it is while still ending: the connection it knew
	// has ended, its number is now B's, serving has not returned.
	ending := &Server{dir: dirA, log: testLog(), served: make(chan struct{}), done: make(chan struct{}),
		conn:  kconn{num: b.conn.num, dev: b.conn.dev, ctl: a.conn.ctl},
		letGo: &letGo{timeout: time.Second, cancel: func() {}}}
	defer ending.letGo.stop()
	ending.wg.Add(1)
	go ending.watch(300 * time.Millisecond)
	watched := make(chan struct{})
	go func() { ending.wg.Wait(); close(watched) }()
	select {
	case <-watched:
	case <-time.After(time.Minute):
		t.Fatal("the watcher of the ended connection still runs a minute later")
	}
	if ended, err := ending.conn.abort(); err != nil || !ended {
		t.Errorf("abort of the ended connection: ended %v, %v; want ended, nil", ended, err)
	}
	if gone, known := ending.conn.gone(); !gone || !known {
		t.Errorf("the ended connection: gone %v (known %v), want gone", gone, known)
	}

	got, err := os.ReadFile(filepath.Join(b.Dir(), "f"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("B after A's watcher and abort ran: read %d bytes, %v; want the %d written", len(got), err, len(want))
	}
	if err := os.WriteFile(filepath.Join(b.Dir(), "g"), want, 0o644); err != nil {
		t.Fatalf("B after A's watcher and abort ran: write: %v", err)
	}
	if gone, _ := b.conn.gone(); gone {
		t.Errorf("B's connection %d has ended", b.conn.num)
	}
	ending.letGo.mu.Lock()
	started := ending.letGo.timer != nil
	ending.letGo.mu.Unlock()
	if !started {
		t.Error("the watcher of the ended connection did not give what was in flight its UnmountTimeout")
	}
}
