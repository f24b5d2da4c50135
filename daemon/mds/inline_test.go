package mds

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// TestInlineApply: inline writes and sizes change an inline file's bytes
// and checksum on every replica alike; snapshots carry them; a spill holds
// only for the version it wrote out, and after it inline writes are
// refused.
func TestInlineApply(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	d.must(cmdInit, &initCmd{Now: 1})
	ino := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "f", Mode: 0o644, Layout: testLayout("ds1", "ds2"), Now: 2, Inline: true}).attr.Ino
	d.must(cmdInlineWrite, &inlineWriteCmd{Ino: ino, Off: 0, Data: []byte("hello world"), Now: 3})
	d.must(cmdInlineWrite, &inlineWriteCmd{Ino: ino, Off: 20, Data: []byte("!"), Now: 4})
	want := append([]byte("hello world"), make([]byte, 9)...)
	want = append(want, '!')
	n := d.f.st.inodes[ino]
	if !bytes.Equal(n.Data, want) || n.Size != uint64(len(want)) || n.DataSum != crc32c.Checksum(want) || n.Mtime != 4 {
		t.Fatalf("after two writes: data %q size %d sum %08x mtime %d", n.Data, n.Size, n.DataSum, n.Mtime)
	}
	if d.f.st.inline != uint64(len(want)) {
		t.Fatalf("inline bytes counted %d, want %d", d.f.st.inline, len(want))
	}
	d.must(cmdSetattr, &setattrCmd{Req: rpc.SetattrReq{Ino: ino, Valid: rpc.SetSize, Size: 5}, Now: 5})
	if n := d.f.st.inodes[ino]; string(n.Data) != "hello" || n.Size != 5 || n.DataSum != crc32c.Checksum([]byte("hello")) {
		t.Fatalf("after truncate: data %q size %d", n.Data, n.Size)
	}
	if r := d.apply(cmdSetattr, &setattrCmd{Req: rpc.SetattrReq{Ino: ino, Valid: rpc.SetSize, Size: rpc.MaxInline + 1}, Now: 5}); errnoOf(r.err) != syscall.EFBIG {
		t.Fatalf("an inline file set past the largest inline size: %v, want EFBIG", r.err)
	}

	// A snapshot carries the inline bytes.
	snap, err := d.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(persist(t, snap)))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(d.f.st), comparable(g.st)) {
		t.Fatal("restored state differs from the snapshotted one")
	}
	if got := g.st.inodes[ino]; !got.Inline || string(got.Data) != "hello" || g.st.inline != 5 {
		t.Fatalf("restored inline file: inline %v data %q, %d inline bytes counted", got.Inline, got.Data, g.st.inline)
	}

	// A spill of an older version is refused; of the current one holds.
	ver := d.f.st.inodes[ino].DataVer
	if r := d.apply(cmdInlineSpill, &inlineSpillCmd{Ino: ino, Gen: 1, Ver: ver - 1, Size: 5}); errnoOf(r.err) != syscall.ESTALE {
		t.Fatalf("spill of a changed file: %v, want ESTALE", r.err)
	}
	d.must(cmdInlineSpill, &inlineSpillCmd{Ino: ino, Gen: 1, Ver: ver, Size: 5})
	if n := d.f.st.inodes[ino]; n.Inline || n.Data != nil || n.Size != 5 || d.f.st.inline != 0 {
		t.Fatalf("after the spill: inline %v, %d bytes kept, size %d, %d inline bytes counted", n.Inline, len(n.Data), n.Size, d.f.st.inline)
	}
	// Unlinked, an inline file's bytes are no longer counted.
	gone := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "gone", Mode: 0o644, Layout: testLayout("ds1"), Now: 6, Inline: true}).attr.Ino
	d.must(cmdInlineWrite, &inlineWriteCmd{Ino: gone, Data: []byte("bytes"), Now: 6})
	if d.f.st.inline != 5 {
		t.Fatalf("%d inline bytes counted, want 5", d.f.st.inline)
	}
	d.must(cmdUnlink, &entryCmd{Parent: rpc.RootIno, Name: "gone", Now: 6})
	if d.f.st.inline != 0 {
		t.Fatalf("after the unlink %d inline bytes counted, want 0", d.f.st.inline)
	}
	if r := d.apply(cmdInlineWrite, &inlineWriteCmd{Ino: ino, Data: []byte("x"), Now: 6}); !errors.Is(r.err, errNotInline) {
		t.Fatalf("inline write after the spill: %v", r.err)
	}
	// A file created without Inline is never inline.
	plain := d.must(cmdCreate, &createCmd{Parent: rpc.RootIno, Name: "g", Mode: 0o644, Layout: testLayout("ds1"), Now: 7}).attr.Ino
	if r := d.apply(cmdInlineWrite, &inlineWriteCmd{Ino: plain, Data: []byte("x"), Now: 8}); !errors.Is(r.err, errNotInline) {
		t.Fatalf("inline write to a file on the data servers: %v", r.err)
	}
}

// TestInlineCorrupt: inline bytes that no longer match their CRC32C (a
// bit flipped in memory or in a snapshot) are EIO to a reader and are not
// moved to the data servers, never returned as data.
func TestInlineCorrupt(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.InlineMax = 64 << 10
	m := startMDS(t, cfg)
	m.fakeDSes(4)
	// A caller that does not read inline files (an older client, the NFS
	// front end) gets a file on the data servers.
	plain := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "plain", Mode: 0o644})
	if lg := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: plain.Attr.Ino, Write: true, Inline: true}); lg.Inline != nil {
		t.Fatal("a file created by a caller that does not read inline files is inline")
	}
	cr := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "f", Mode: 0o644, Inline: true})
	ino := cr.Attr.Ino
	lg := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Write: true, Inline: true})
	if lg.Inline == nil {
		t.Fatal("a new file of an MDS with an inline threshold is not inline")
	}
	data := bytes.Repeat([]byte("0123456789"), 100)
	w := must[rpc.InlineWriteResp](m, rpc.MInlineWrite, &rpc.InlineWriteReq{Ino: ino, Data: data, Cap: lg.Cap})
	if w.Spilled || w.Attr.Size != uint64(len(data)) {
		t.Fatalf("inline write: spilled %v, size %d", w.Spilled, w.Attr.Size)
	}
	lg = must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Inline: true})
	if lg.Inline == nil || !bytes.Equal(lg.Inline.Data, data) || lg.Inline.Sum != crc32c.Checksum(data) {
		t.Fatal("layoutget does not return the inline bytes written")
	}

	// A write without a write capability is refused.
	rd := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Inline: true})
	if _, err := call[rpc.InlineWriteResp](m, rpc.MInlineWrite, &rpc.InlineWriteReq{Ino: ino, Data: []byte("x"), Cap: rd.Cap}); errnoOf(err) != syscall.EACCES {
		t.Fatalf("inline write with a read capability: %v, want EACCES", err)
	}

	m.fsm.mu.Lock()
	n := m.fsm.st.inodes[ino]
	bad := bytes.Clone(n.Data)
	bad[77] ^= 0x10
	n.Data = bad
	m.fsm.mu.Unlock()
	if _, err := call[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Inline: true}); errnoOf(err) != syscall.EIO {
		t.Fatalf("layoutget of corrupt inline data: %v, want EIO", err)
	}
	// An older reader's layoutget would move it: the corrupt bytes stay.
	if _, err := call[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino}); errnoOf(err) != syscall.EIO {
		t.Fatalf("layoutget without inline of corrupt inline data: %v, want EIO", err)
	}
	m.fsm.mu.RLock()
	still := m.fsm.st.inodes[ino].Inline
	m.fsm.mu.RUnlock()
	if !still {
		t.Fatal("corrupt inline data was moved to the data servers")
	}
}

// TestInlineGrantUncounted: the write grant of an inline file is not
// counted as an open (nothing for its writer to return, nothing kept for
// it), a file on the data servers has its writers counted as before, and
// a refresh with Count (a writer whose file left the MDS) is counted, so
// that a rebuild waits for it.
func TestInlineGrantUncounted(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.InlineMax = 64 << 10
	m := startMDS(t, cfg)
	m.fakeDSes(4)
	ino := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "small", Mode: 0o644, Inline: true}).Attr.Ino
	plain := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "plain", Mode: 0o644}).Attr.Ino
	writers := func(ino uint64) int {
		m.wr.mu.Lock()
		defer m.wr.mu.Unlock()
		if f := m.wr.files[ino]; f != nil {
			return f.open
		}
		return 0
	}
	for _, req := range []rpc.LayoutGetReq{
		{Ino: ino, Write: true, Inline: true},
		{Ino: ino, Write: true, Inline: true, Refresh: true},
		{Ino: ino, Write: true, Inline: true, Refresh: true, Count: true},
	} {
		lg := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &req)
		if lg.Inline == nil || lg.Uncounted != (!req.Refresh || req.Count) {
			t.Fatalf("%+v of an inline file: inline %v, uncounted %v", req, lg.Inline != nil, lg.Uncounted)
		}
		if n := writers(ino); n != 0 {
			t.Fatalf("%+v of an inline file: %d writers counted, want 0", req, n)
		}
	}
	m.wr.mu.Lock()
	_, kept := m.wr.files[ino]
	m.wr.mu.Unlock()
	if kept {
		t.Fatal("the MDS keeps writer state for an inline file nobody will return")
	}
	if m.wr.busy(ino) != "" {
		t.Fatalf("an inline file's writers hold off rebuilds: %s", m.wr.busy(ino))
	}

	// A file on the data servers: its open and a refresh with Count are
	// counted, a plain refresh is not; each return ends one.
	for i, req := range []rpc.LayoutGetReq{
		{Ino: plain, Write: true, Inline: true},
		{Ino: plain, Write: true, Inline: true, Refresh: true},
		{Ino: plain, Write: true, Inline: true, Refresh: true, Count: true},
	} {
		lg := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &req)
		if lg.Inline != nil || lg.Uncounted {
			t.Fatalf("%+v of a file on the data servers: inline %v, uncounted %v", req, lg.Inline != nil, lg.Uncounted)
		}
		if want := []int{1, 1, 2}[i]; writers(plain) != want {
			t.Fatalf("after %+v: %d writers counted, want %d", req, writers(plain), want)
		}
	}
	if m.wr.busy(plain) == "" {
		t.Fatal("a file open for writing on the data servers does not hold off rebuilds")
	}
	for range 2 {
		must[rpc.Empty](m, rpc.MLayoutReturn, &rpc.LayoutReturnReq{Ino: plain, Write: true})
	}
	if m.wr.busy(plain) != "" {
		t.Fatalf("after both returns: %s", m.wr.busy(plain))
	}
}
