package mds

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

// fsmDriver applies commands to an FSM without raft.
type fsmDriver struct {
	t     *testing.T
	f     *fsm
	index uint64
}

func (d *fsmDriver) apply(t cmdType, p any) result {
	d.t.Helper()
	d.index++
	r, _ := d.f.Apply(&raft.Log{Index: d.index, Type: raft.LogCommand, Data: encodeCommand(t, p)}).(result)
	return r
}

func (d *fsmDriver) must(t cmdType, p any) result {
	d.t.Helper()
	r := d.apply(t, p)
	if r.err != nil {
		d.t.Fatalf("command %d %+v: %v", t, p, r.err)
	}
	return r
}

func testLayout(targets ...string) layout.Layout {
	return layout.Layout{Width: len(targets), Unit: 1 << 20, Scheme: layout.Scheme{Kind: layout.KindNone}, Targets: targets}
}

// populate builds a namespace with every kind of state: dirs with
// policies, files with layouts and xattrs, symlinks, hard links, orphans,
// registered data servers.
func (d *fsmDriver) populate(r *rand.Rand, n int) {
	d.must(cmdInit, &initCmd{Now: 1})
	d.must(cmdRegisterDS, &registerCmd{ID: "ds1", Addr: "a:1", Node: "n1"})
	d.must(cmdRegisterDS, &registerCmd{ID: "ds2", Addr: "a:2", Node: "n2"})
	dirs := []uint64{rpc.RootIno}
	var files []uint64
	for i := 0; i < n; i++ {
		now := int64(100 + i)
		parent := dirs[r.IntN(len(dirs))]
		name := fmt.Sprintf("n%d", i)
		switch r.IntN(6) {
		case 0:
			res := d.must(cmdMkdir, &mkdirCmd{Parent: parent, Name: name, Mode: 0o750, Uid: 3, Now: now})
			dirs = append(dirs, res.attr.Ino)
			if r.IntN(2) == 0 {
				d.must(cmdSetXattr, &xattrCmd{Ino: res.attr.Ino, Name: rpc.LayoutXattr, Value: []byte("width=2,unit=64K"), Now: now})
			}
		case 1:
			if r.IntN(2) == 0 {
				d.must(cmdMknod, &mknodCmd{Parent: parent, Name: name, Mode: rpc.TypeBlock | 0o600, Rdev: rpc.Mkdev(8, uint32(i)), Now: now})
				break
			}
			d.must(cmdSymlink, &symlinkCmd{Parent: parent, Name: name, Target: "../t" + name, Now: now})
		case 2:
			if len(files) > 0 {
				d.must(cmdLink, &linkCmd{Ino: files[r.IntN(len(files))], NewParent: parent, NewName: name, Now: now})
			}
		case 3:
			if len(files) > 0 {
				victim := files[r.IntN(len(files))]
				d.must(cmdRelayout, &relayoutCmd{Ino: victim, Layout: testLayout("ds2"), Now: now}) // orphans the old one
			}
		default:
			res := d.must(cmdCreate, &createCmd{Parent: parent, Name: name, Mode: 0o640, Layout: testLayout("ds1", "ds2"), Now: now})
			d.must(cmdSetXattr, &xattrCmd{Ino: res.attr.Ino, Name: "user.k", Value: []byte(name), Now: now})
			if r.IntN(3) == 0 {
				d.must(cmdUnlink, &entryCmd{Parent: parent, Name: name, Now: now}) // orphans it
			} else {
				files = append(files, res.attr.Ino)
			}
		}
	}
}

func persist(t *testing.T, s raft.FSMSnapshot) []byte {
	t.Helper()
	sink := &memSink{}
	if err := s.Persist(sink); err != nil || !sink.closed {
		t.Fatalf("persist: %v (closed %v)", err, sink.closed)
	}
	s.Release()
	return sink.Bytes()
}

// comparable returns the state with the copy-on-write epochs cleared.
func comparable(st *state) *state {
	c := *st
	c.epoch = 0
	c.touched = nil // scratch of the command being applied
	c.inodes = map[uint64]*inode{}
	for k, n := range st.inodes {
		cp := *n
		cp.epoch = 0
		if len(cp.Xattrs) == 0 {
			cp.Xattrs = nil
		}
		c.inodes[k] = &cp
	}
	return &c
}

func TestSnapshotRestoreEqual(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	d.populate(rand.New(rand.NewPCG(1, 2)), 300)
	if len(d.f.st.orphans) == 0 || len(d.f.st.inodes) < 100 {
		t.Fatalf("populate made %d inodes, %d orphans", len(d.f.st.inodes), len(d.f.st.orphans))
	}
	snap, err := d.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b1 := persist(t, snap)

	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(b1))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(d.f.st), comparable(g.st)) {
		t.Fatal("restored state differs from the snapshotted one")
	}
	snap2, _ := g.Snapshot()
	if b2 := persist(t, snap2); !bytes.Equal(b1, b2) {
		t.Fatalf("snapshot of the restored state differs: %d vs %d bytes", len(b1), len(b2))
	}
	// The restored FSM keeps working: the inode counter continues.
	d2 := &fsmDriver{t: t, f: g, index: d.index}
	a := d2.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "after", Layout: testLayout("ds1"), Now: 9})
	if a.attr.Ino != d.f.st.nextIno {
		t.Fatalf("new inode %d after restore, want %d", a.attr.Ino, d.f.st.nextIno)
	}
}

// TestSnapshotCopyOnWrite persists a snapshot while later commands change
// everything it captured; what it writes must be the state at capture
// time. Run with -race: Persist reads while Apply writes.
func TestSnapshotCopyOnWrite(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	d.populate(rand.New(rand.NewPCG(3, 4)), 200)
	early, _ := d.f.Snapshot()
	ref, _ := d.f.Snapshot()
	want := persist(t, ref)

	var wg sync.WaitGroup
	var got []byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		sink := &memSink{}
		if err := early.Persist(sink); err != nil {
			t.Error(err)
		}
		got = sink.Bytes()
	}()
	d.f.mu.RLock()
	var inos []uint64
	for ino := range d.f.st.inodes {
		inos = append(inos, ino)
	}
	d.f.mu.RUnlock()
	for i, ino := range inos {
		d.apply(cmdSetattr, &setattrCmd{Req: rpc.SetattrReq{Ino: ino, Valid: rpc.SetMode | rpc.SetUid, Mode: 0o111, Uid: 77}, Now: int64(1e6 + i)})
		d.apply(cmdSetXattr, &xattrCmd{Ino: ino, Name: "trusted.z", Value: []byte("zz"), Now: int64(1e6 + i)})
	}
	d.must(cmdMkdir, &mkdirCmd{Parent: rpc.RootIno, Name: "late", Now: 2e6})
	d.must(cmdRegisterDS, &registerCmd{ID: "ds9", Addr: "a:9"})
	d.must(cmdPurge, &purgeCmd{Orphans: []orphanKey{{Ino: 5, Gen: 1}}})
	wg.Wait()
	if !bytes.Equal(got, want) {
		t.Fatalf("a snapshot persisted after later changes differs from its capture (%d vs %d bytes)", len(got), len(want))
	}
	snap, _ := d.f.Snapshot()
	if now := persist(t, snap); bytes.Equal(now, want) {
		t.Fatal("the later changes are not in a new snapshot")
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	d.populate(rand.New(rand.NewPCG(5, 6)), 50)
	snap, _ := d.f.Snapshot()
	good := persist(t, snap)
	for _, b := range [][]byte{nil, {0}, good[:len(good)/2], append([]byte{1, 2}, good...)} {
		g := newFSM()
		if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err == nil {
			t.Errorf("restore of %d garbage bytes succeeded", len(b))
		}
		if len(g.st.inodes) != 1 {
			t.Errorf("a failed restore changed the state")
		}
	}
}

func TestApplyDecodeFailurePanics(t *testing.T) {
	f := newFSM()
	if r := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{byte(cmdIgnorable | 0x7f), 1, 2, 3}}); r != nil {
		t.Errorf("an ignorable unknown command returned %v", r)
	}
	for _, data := range [][]byte{{0x7f}, {byte(cmdCreate), 0xff}, nil} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "does not decode") {
					t.Errorf("Apply(%x) recovered %v, want a decode panic", data, p)
				}
			}()
			f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: data})
		}()
	}
}

// seedCommands are one encoded command of every type.
func seedCommands() [][]byte {
	return [][]byte{
		encodeCommand(cmdInit, &initCmd{Now: 5}),
		encodeCommand(cmdCreate, &createCmd{Parent: 1, Name: "f", Mode: 0o644, Exclusive: true, Layout: testLayout("a", "b"), Now: 7}),
		encodeCommand(cmdMkdir, &mkdirCmd{Parent: 1, Name: "d", Mode: 0o755}),
		encodeCommand(cmdSymlink, &symlinkCmd{Parent: 1, Name: "s", Target: "/x"}),
		encodeCommand(cmdMknod, &mknodCmd{Parent: 1, Name: "p", Mode: rpc.TypeChar | 0o600, Rdev: rpc.Mkdev(1, 3)}),
		encodeCommand(cmdLink, &linkCmd{Ino: 3, NewParent: 1, NewName: "l"}),
		encodeCommand(cmdUnlink, &entryCmd{Parent: 1, Name: "f"}),
		encodeCommand(cmdRmdir, &entryCmd{Parent: 1, Name: "d"}),
		encodeCommand(cmdRename, &renameCmd{OldParent: 1, OldName: "a", NewParent: 2, NewName: "b", Flags: 2}),
		encodeCommand(cmdSetattr, &setattrCmd{Req: rpc.SetattrReq{Ino: 2, Valid: 63, Mode: 0o777, Size: 9, Atime: -1}}),
		encodeCommand(cmdSetXattr, &xattrCmd{Ino: 2, Name: "user.a", Value: []byte("v"), Flags: 1}),
		encodeCommand(cmdRemoveXattr, &xattrCmd{Ino: 2, Name: "user.a"}),
		encodeCommand(cmdRelayout, &relayoutCmd{Ino: 2, Layout: testLayout("c")}),
		encodeCommand(cmdCommit, &commitCmd{Ino: 2, Gen: 1, End: 100, Mtime: 3}),
		encodeCommand(cmdRegisterDS, &registerCmd{ID: "ds", Addr: "h:1", Node: "n"}),
		encodeCommand(cmdPurge, &purgeCmd{Orphans: []orphanKey{{1, 2}, {3, 4}}}),
		encodeCommand(cmdInlineWrite, &inlineWriteCmd{Ino: 2, Off: 3, Data: []byte("abc"), Now: 4}),
		encodeCommand(cmdInlineSpill, &inlineSpillCmd{Ino: 2, Gen: 1, Ver: 3, Size: 6}),
		{byte(cmdIgnorable | 0x33), 9, 9},
		encodeCommand(cmdBatch, &batchCmd{Cmds: [][]byte{
			encodeCommand(cmdInit, &initCmd{Now: 5}),
			encodeCommand(cmdUnlink, &entryCmd{Parent: 1, Name: "f"}),
		}}),
	}
}

// FuzzDecodeCommand feeds arbitrary raft entries to the command decoder
// (not to Apply, which panics by design on what the decoder refuses): it
// must not panic, and what it accepts must survive encode/decode.
func FuzzDecodeCommand(f *testing.F) {
	for _, b := range seedCommands() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, p, err := decodeCommand(b)
		if err != nil || p == nil {
			return
		}
		again := encodeCommand(typ, p)
		typ2, p2, err := decodeCommand(again)
		if err != nil || typ2 != typ || !reflect.DeepEqual(p, p2) {
			t.Fatalf("decode(encode(%+v)) = %d %+v, %v", p, typ2, p2, err)
		}
	})
}
