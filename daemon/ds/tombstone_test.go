package ds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestTombstone: after the MDS removed a generation with a tombstone, a
// capability granted before the removal is refused for every call (ESTALE)
// and re-creates nothing, also after a restart of the data server; once
// the tombstone is past, the id is usable again. A removal without a
// tombstone (a moved copy) revokes nothing.
func TestTombstone(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	h := newHarness(t, func(_ *Config, d *Deps) {
		d.Clock = func() time.Time { return time.Unix(0, now.Load()) }
	})
	id := rpc.ComponentID{Ino: 42, Gen: 3, Col: 1}
	saved := h.rw(id) // a client's capability, kept past the rm
	h.mustWrite(id, 0, []byte("before rm"))

	remove := func(until int64) {
		t.Helper()
		var resp rpc.DSResp
		req := rpc.DSReq{Cap: h.adminOf(id), ID: id, Tombstone: until}
		if err := h.c.Call(t.Context(), h.s.Addr(), rpc.DRemove, &req, &resp); err != nil {
			t.Fatalf("remove: %v", err)
		}
	}
	refused := func(when string) {
		t.Helper()
		if _, err := h.writeTok(saved, id, 0, []byte("resurrected")); !errors.Is(err, syscall.ESTALE) {
			t.Errorf("%s: write with a saved capability = %v, want ESTALE", when, err)
		}
		other := rpc.ComponentID{Ino: id.Ino, Gen: id.Gen, Col: 0} // another column of the generation
		if _, err := h.call(rpc.DTruncate, h.rw(other), other, 100); !errors.Is(err, syscall.ESTALE) {
			t.Errorf("%s: truncate = %v, want ESTALE", when, err)
		}
		if _, err := h.readInto(saved, id, 0, make([]byte, 9)); !errors.Is(err, syscall.ESTALE) {
			t.Errorf("%s: read with a saved capability = %v, want ESTALE", when, err)
		}
		for _, c := range []rpc.ComponentID{id, other} {
			if _, err := os.Stat(h.s.ComponentPath(c)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: component %v is on disk: %v", when, c, err)
			}
		}
	}
	remove(now.Load() + int64(time.Minute))
	refused("after rm")
	h.restart()
	refused("after a restart")

	// Another generation of the inode is not affected.
	next := rpc.ComponentID{Ino: id.Ino, Gen: id.Gen + 1}
	h.mustWrite(next, 0, []byte("new generation"))

	// Past the tombstone every capability of the generation has expired;
	// the MDS never grants one again, so the id may be reused.
	now.Add(int64(2 * time.Minute))
	h.mustWrite(id, 0, []byte("later"))

	// A removal without a tombstone revokes nothing.
	remove(0)
	h.mustWrite(id, 0, []byte("moved back"))
}

// TestTombstonePrune: past tombstones are dropped as new ones come, so
// that a data server that sees many removals keeps only the live ones, in
// memory and on disk, and a restart loads exactly those.
func TestTombstonePrune(t *testing.T) {
	dir := t.TempDir()
	ts, err := openTombstones(OSDisk{}, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	for i := range int64(n) {
		// Each lives until 10 ticks later; the clock advances one tick per
		// removal: at the end the last 11 are live.
		if err := ts.add(uint64(i), 1, i+10, i); err != nil {
			t.Fatal(err)
		}
	}
	if l := ts.len(); l > 1100 {
		t.Errorf("%d tombstones held after %d removals of which 11 are live", l, n)
	}
	for i := range uint64(n) {
		if live := i+10 >= n-1; ts.removed(i, 1, n-1) != live {
			t.Fatalf("inode %d: removed = %v, want %v", i, !live, live)
		}
	}
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	again, err := openTombstones(OSDisk{}, dir, n-1)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if again.len() != 11 || !again.removed(n-1, 1, n-1) {
		t.Fatalf("after a restart: %d tombstones, want the 11 live ones", again.len())
	}
}

// syncCounter is OSDisk whose files count their syncs.
type syncCounter struct {
	OSDisk
	syncs *atomic.Int64
}

type countedFile struct {
	File
	syncs *atomic.Int64
}

func (d syncCounter) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := d.OSDisk.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countedFile{File: f, syncs: d.syncs}, nil
}

func (f countedFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

// TestTombstoneConcurrent: removals that arrive together (the MDS's
// collector removes many files at once) are each durable when add
// returns — a restart finds every one, also across the rewrites that
// prune the file — and they share syncs rather than paying one each.
func TestTombstoneConcurrent(t *testing.T) {
	dir := t.TempDir()
	var syncs atomic.Int64
	disk := syncCounter{syncs: &syncs}
	ts, err := openTombstones(disk, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 200
	start := syncs.Load()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range uint64(workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint64(each) {
				ino := w*each + i
				// Live until far ahead; the clock advances so that
				// pruning runs and drops nothing live.
				if err := ts.add(ino, 1, 1<<40, int64(ino)); err != nil {
					errs <- err
					return
				}
				if !ts.removed(ino, 1, int64(ino)) {
					errs <- fmt.Errorf("inode %d not removed right after its add", ino)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := syncs.Load() - start
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	again, err := openTombstones(OSDisk{}, dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	if again.len() != workers*each {
		t.Fatalf("after a restart: %d tombstones, want %d", again.len(), workers*each)
	}
	for ino := range uint64(workers * each) {
		if !again.removed(ino, 1, 1) {
			t.Fatalf("after a restart: inode %d is not removed", ino)
		}
	}
	t.Logf("%d concurrent removals, %d syncs", workers*each, n)
	if n > workers*each {
		t.Errorf("%d syncs for %d removals: concurrent removals do not share syncs", n, workers*each)
	}
}
