package mds

import (
	"bytes"
	"io"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

func rsLayout(targets ...string) layout.Layout {
	return layout.Layout{Width: 4, Unit: 1 << 16, Scheme: layout.Scheme{Kind: layout.KindRS, K: 4, M: 2}, Targets: targets}
}

func mirrorLayout(targets ...string) layout.Layout {
	return layout.Layout{Width: 2, Unit: 1 << 16, Scheme: layout.Scheme{Kind: layout.KindMirror, N: 2}, Targets: targets}
}

// TestRepairCommands: the failure-handling commands validate against the
// state and change it as documented: stale marks refuse what would leave
// a file unreadable or name a component that moved; a rebuild swaps the
// target, clears the mark and makes the old copy a stray; an abort and a
// forgotten file turn their targets into strays; drains need a
// registered server.
func TestRepairCommands(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	d.must(cmdInit, &initCmd{Now: 1})
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		d.must(cmdRegisterDS, &registerCmd{ID: id, Addr: id + ":1", Node: "n" + id})
	}
	rs := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "rs", Layout: rsLayout("a", "b", "c", "d", "e", "f"), Now: 2}).attr
	mir := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "m", Layout: mirrorLayout("a", "b", "c", "d"), Now: 2}).attr
	none := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "n", Layout: testLayout("a", "b"), Now: 2}).attr
	st := d.f.st
	errno := func(r result) syscall.Errno { return errnoOf(r.err) }

	for _, tc := range []struct {
		name string
		cmd  staleCmd
		want syscall.Errno
	}{
		{"none has no redundancy", staleCmd{Ino: none.Ino, Gen: none.Gen, Comps: []uint32{0}, DS: []string{"a"}, Strict: true}, syscall.EINVAL},
		{"old generation", staleCmd{Ino: rs.Ino, Gen: rs.Gen + 1, Comps: []uint32{0}, DS: []string{"a"}, Strict: true}, syscall.ESTALE},
		{"moved component", staleCmd{Ino: rs.Ino, Gen: rs.Gen, Comps: []uint32{0}, DS: []string{"z"}, Strict: true}, syscall.ESTALE},
		{"rs loses two", staleCmd{Ino: rs.Ino, Gen: rs.Gen, Comps: []uint32{1, 4}, DS: []string{"b", "e"}, Strict: true}, 0},
		{"rs loses a third", staleCmd{Ino: rs.Ino, Gen: rs.Gen, Comps: []uint32{2}, DS: []string{"c"}, Strict: true}, syscall.EIO},
		{"mirror loses copy 0 of column 0", staleCmd{Ino: mir.Ino, Gen: mir.Gen, Comps: []uint32{0}, DS: []string{"a"}, Strict: true}, 0},
		{"mirror loses copy 1 of column 1", staleCmd{Ino: mir.Ino, Gen: mir.Gen, Comps: []uint32{3}, DS: []string{"d"}, Strict: true}, 0},
		{"mirror loses both copies of column 0", staleCmd{Ino: mir.Ino, Gen: mir.Gen, Comps: []uint32{2}, DS: []string{"c"}, Strict: true}, syscall.EIO},
	} {
		c := tc.cmd
		c.Reason = "write"
		if got := errno(d.apply(cmdStale, &c)); got != tc.want {
			t.Errorf("%s: errno %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := st.staleList(st.get(rs.Ino)); !reflect.DeepEqual(got, []uint32{1, 4}) {
		t.Fatalf("rs stale %v, want [1 4]", got)
	}

	// Rebuild component 1 of rs onto g: the intent, then the swap.
	if got := errno(d.apply(cmdRebuildDone, &rebuildDoneCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, From: "b", To: "g", Now: 10})); got != syscall.ESTALE {
		t.Errorf("swap without an intent: %v, want ESTALE", got)
	}
	if got := errno(d.apply(cmdRebuildStart, &rebuildStartCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, From: "b", To: "c", Now: 10})); got != syscall.EEXIST {
		t.Errorf("rebuild onto a server the file uses: %v, want EEXIST", got)
	}
	d.must(cmdRebuildStart, &rebuildStartCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, From: "b", To: "g", Now: 10, Term: 2})
	// Progress of the intent's own attempt moves Done forward, never back;
	// a report of another term or target changes nothing.
	d.must(cmdRebuildProgress, &rebuildProgressCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, To: "g", Term: 2, Done: 4 << 20})
	d.must(cmdRebuildProgress, &rebuildProgressCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, To: "g", Term: 2, Done: 2 << 20})
	if got := errno(d.apply(cmdRebuildProgress, &rebuildProgressCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, To: "g", Term: 1, Done: 8 << 20})); got != syscall.ESTALE {
		t.Errorf("progress of an earlier term: %v, want ESTALE", got)
	}
	if got := st.rep.rebuilds[compKey{Ino: rs.Ino, Comp: 1}].Done; got != 4<<20 {
		t.Fatalf("intent done %d, want %d", got, 4<<20)
	}
	// A write grant resets it: the copy may miss the write. No progress is
	// recorded until an attempt starts afresh.
	d.must(cmdRebuildReset, &rebuildResetCmd{Ino: rs.Ino})
	if got := errno(d.apply(cmdRebuildProgress, &rebuildProgressCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, To: "g", Term: 2, Done: 6 << 20})); got != syscall.ESTALE {
		t.Errorf("progress after a write grant: %v, want ESTALE", got)
	}
	if in := st.rep.rebuilds[compKey{Ino: rs.Ino, Comp: 1}]; in.Done != 0 || !in.Dirty {
		t.Fatalf("after a reset: %+v", in)
	}
	d.must(cmdRebuildStart, &rebuildStartCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, From: "b", To: "g", Now: 10, Term: 3})
	d.must(cmdRebuildProgress, &rebuildProgressCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, To: "g", Term: 3, Done: 2 << 20})
	d.must(cmdRebuildDone, &rebuildDoneCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 1, From: "b", To: "g", Now: 11})
	n := st.get(rs.Ino)
	if n.Layout.Targets[1] != "g" || !reflect.DeepEqual(st.staleList(n), []uint32{4}) {
		t.Fatalf("after the swap: targets %v stale %v", n.Layout.Targets, st.staleList(n))
	}
	if since, ok := st.rep.strays[strayKey{Ino: rs.Ino, Gen: rs.Gen, Col: 1, DS: "b"}]; !ok || since != 11 {
		t.Fatalf("old copy on b not a stray: %v", st.rep.strays)
	}
	// In place: no stray.
	d.must(cmdRebuildStart, &rebuildStartCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 4, From: "e", To: "e", Now: 12})
	d.must(cmdRebuildDone, &rebuildDoneCmd{Ino: rs.Ino, Gen: rs.Gen, Comp: 4, From: "e", To: "e", Now: 13})
	if len(st.staleList(st.get(rs.Ino))) != 0 || len(st.rep.strays) != 1 {
		t.Fatalf("after an in-place rebuild: stale %v strays %v", st.staleList(st.get(rs.Ino)), st.rep.strays)
	}
	// An abort makes the partial target a stray; a forgotten file too.
	d.must(cmdRebuildStart, &rebuildStartCmd{Ino: mir.Ino, Gen: mir.Gen, Comp: 0, From: "a", To: "h", Now: 14})
	d.must(cmdRebuildAbort, &rebuildAbortCmd{Ino: mir.Ino, Comp: 0, Now: 15})
	d.must(cmdRebuildStart, &rebuildStartCmd{Ino: mir.Ino, Gen: mir.Gen, Comp: 3, From: "d", To: "h", Now: 16})
	d.must(cmdUnlink, &entryCmd{Parent: rpc.RootIno, Name: "m", Now: 17})
	d.must(cmdRepairForget, &repairForgetCmd{Inos: []uint64{mir.Ino}, Now: 18})
	for _, k := range []strayKey{{Ino: mir.Ino, Gen: mir.Gen, Col: 0, DS: "h"}, {Ino: mir.Ino, Gen: mir.Gen, Col: 3, DS: "h"}} {
		if _, ok := st.rep.strays[k]; !ok {
			t.Errorf("no stray %+v: %v", k, st.rep.strays)
		}
	}
	if len(st.rep.stale) != 0 || len(st.rep.rebuilds) != 0 {
		t.Errorf("after forgetting: stale %v rebuilds %v", st.rep.stale, st.rep.rebuilds)
	}
	if got := errno(d.apply(cmdDrain, &drainCmd{ID: "zz", Drain: true})); got != syscall.ENOENT {
		t.Errorf("drain of an unregistered server: %v", got)
	}
	d.must(cmdDrain, &drainCmd{ID: "h", Drain: true})

	// Damage records: a scrub finding, a repair's clear only of the record
	// it repaired.
	rec := damagedRecord{Ino: rs.Ino, Gen: rs.Gen, Col: 2, DS: "c", Blocks: []uint64{3}, BlockSize: 1 << 16, Found: 20}
	d.must(cmdDamaged, &damagedCmd{Rec: rec})
	d.must(cmdDamaged, &damagedCmd{Rec: rec, Clear: true, IfFound: 19})
	if len(st.rep.damaged) != 1 {
		t.Fatal("a clear of another finding dropped the record")
	}
	d.must(cmdDamaged, &damagedCmd{Rec: rec, Clear: true, IfFound: 20})
	if len(st.rep.damaged) != 0 {
		t.Fatal("the repair's clear kept the record")
	}
	d.must(cmdDamaged, &damagedCmd{Rec: damagedRecord{Ino: none.Ino, Gen: none.Gen, Col: 1, DS: "b", Blocks: []uint64{0, 9}, BlockSize: 4096, Found: 21}})

	// The write-grant horizon tells a leader its predecessors' grants.
	d.must(cmdGrantHorizon, &grantHorizonCmd{Until: 100, Term: 2})
	d.must(cmdGrantHorizon, &grantHorizonCmd{Until: 200, Term: 3})
	d.must(cmdGrantHorizon, &grantHorizonCmd{Until: 150, Term: 3})
	if st.rep.grantsUntil != 200 || st.rep.predecessorsUntil(3) != 100 || st.rep.predecessorsUntil(4) != 200 {
		t.Errorf("horizon %+v: predecessors of 3 until %d, of 4 until %d", st.rep, st.rep.predecessorsUntil(3), st.rep.predecessorsUntil(4))
	}

	// All of it survives a snapshot.
	snap, err := d.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := persist(t, snap)
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.f.st.rep, g.st.rep) {
		t.Fatalf("restored failure-handling state differs:\n%+v\n%+v", d.f.st.rep, g.st.rep)
	}
}

// TestWritersSwap: a swap waits for no writer: it is refused while a write
// grant is out or when one was made during the watch, and a write grant
// asked for during a swap waits for it to end.
func TestWritersSwap(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newWriters(func() time.Time { return now })
	w.grant(7, now.Add(time.Minute), true)
	wt := w.watch(7)
	if why, _ := w.swap(wt, func() error { t.Fatal("swapped under a writer"); return nil }); why == "" {
		t.Fatal("no reason given")
	}
	w.release(7)
	w.unwatch(wt)
	wt = w.watch(7)
	w.grant(7, now.Add(time.Minute), true)
	w.release(7)
	if why, _ := w.swap(wt, func() error { t.Fatal("swapped after a grant during the watch"); return nil }); why == "" {
		t.Fatal("no reason given")
	}
	w.unwatch(wt)
	wt = w.watch(7)
	granted := make(chan struct{})
	why, err := w.swap(wt, func() error {
		go func() {
			w.grant(7, now.Add(time.Minute), true)
			close(granted)
		}()
		select {
		case <-granted:
			t.Error("a write grant went through during a swap")
		case <-time.After(50 * time.Millisecond):
		}
		return nil
	})
	if why != "" || err != nil {
		t.Fatalf("swap with no writer: %q %v", why, err)
	}
	<-granted
	w.unwatch(wt)
	// A new leader waits out its predecessors' grants.
	w.takeOffice(now.Add(time.Minute))
	if why := w.busy(8); why == "" {
		t.Fatal("a file is not busy before the predecessors' horizon")
	}
	now = now.Add(2 * time.Minute)
	if why := w.busy(8); why != "" {
		t.Fatalf("busy after the horizon: %s", why)
	}
}

// FuzzDecodeRepairCommand feeds arbitrary raft entries, seeded with the
// failure-handling commands, to the command decoder: no panic, and what it
// accepts survives encode/decode. FuzzSnapshotRepair does the same for
// snapshots holding failure-handling records: a restore of garbage fails
// with an error, never a panic.
func FuzzDecodeRepairCommand(f *testing.F) {
	for _, c := range []struct {
		t cmdType
		p any
	}{
		{cmdStale, &staleCmd{Ino: 5, Gen: 1, Comps: []uint32{1, 4}, DS: []string{"a", "b"}, Reason: "write", Strict: true}},
		{cmdRebuildStart, &rebuildStartCmd{Ino: 5, Gen: 1, Comp: 2, From: "a", To: "c", Now: 7, Term: 3}},
		{cmdRebuildDone, &rebuildDoneCmd{Ino: 5, Gen: 1, Comp: 2, From: "a", To: "c", Now: 8}},
		{cmdRebuildAbort, &rebuildAbortCmd{Ino: 5, Comp: 2, Now: 9}},
		{cmdRepairForget, &repairForgetCmd{Inos: []uint64{5, 6}, Now: 10}},
		{cmdDrain, &drainCmd{ID: "ds3", Drain: true}},
		{cmdStrayPurge, &strayPurgeCmd{Keys: []strayKey{{Ino: 5, Gen: 1, Col: 2, DS: "a"}}}},
		{cmdDamaged, &damagedCmd{Rec: damagedRecord{Ino: 5, Gen: 1, Col: 0, DS: "a", Blocks: []uint64{3, 9}, BlockSize: 65536, Found: 11}}},
		{cmdGrantHorizon, &grantHorizonCmd{Until: 12, Term: 4}},
		{cmdRebuildProgress, &rebuildProgressCmd{Ino: 5, Gen: 1, Comp: 2, To: "c", Term: 3, Done: 4 << 20}},
		{cmdRebuildReset, &rebuildResetCmd{Ino: 5}},
	} {
		f.Add(encodeCommand(c.t, c.p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, p, err := decodeCommand(b)
		if err != nil || p == nil {
			return
		}
		typ2, p2, err := decodeCommand(encodeCommand(typ, p))
		if err != nil || typ2 != typ || !reflect.DeepEqual(p, p2) {
			t.Fatalf("decode(encode(%+v)) = %d %+v, %v", p, typ2, p2, err)
		}
	})
}

func FuzzSnapshotRepair(f *testing.F) {
	st := newState()
	st.rep.stale[5] = staleEntry{Ino: 5, Gen: 1, Comps: []staleComp{{Comp: 1, Reason: "write"}}}
	st.rep.rebuilds[compKey{Ino: 5, Comp: 2}] = rebuildIntent{Ino: 5, Gen: 1, Comp: 2, To: "c", Term: 2, Done: 2 << 20}
	st.rep.strays[strayKey{Ino: 5, Gen: 1, Col: 3, DS: "d"}] = 4
	st.rep.draining["ds3"] = true
	st.rep.damaged[damagedKey{Ino: 6, Gen: 1, Col: 0}] = damagedRecord{Ino: 6, Gen: 1, DS: "a", Blocks: []uint64{1}, BlockSize: 4096}
	var b bytes.Buffer
	if err := writeSnapshot(&b, st.capture()); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, p []byte) {
		_, _ = readSnapshot(bytes.NewReader(p))
	})
}
