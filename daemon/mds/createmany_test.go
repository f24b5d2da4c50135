package mds

import (
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestCreateMany: one MCreateMany call answers each item as its own
// MCreate would: created files with their attributes and layouts, a
// duplicate name within the call EEXIST, a bad name EINVAL, an existing
// file opened without exclusive, a directory the caller may not write
// EACCES, an item past the caller's inode quota EDQUOT; the refused items
// cost no log space, and the created files are found by lookup.
func TestCreateMany(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	const alice = 61001
	as := rpc.Cred{Uid: alice, Gid: alice}
	must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: rpc.RootIno, Valid: rpc.SetMode, Mode: 0o1777})
	mine := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "mine", Mode: 0o755, Cred: as}).Attr.Ino
	closed := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "closed", Mode: 0o755}).Attr.Ino
	old, err := callAs[rpc.CreateResp](m, as, rpc.MCreate, &rpc.CreateReq{Parent: mine, Name: "old", Mode: 0o600, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	// alice has 2 inodes (mine, old); her limit leaves room for 3 more.
	must[rpc.QuotaResp](m, rpc.MQuotaSet, &rpc.QuotaReq{Kind: rpc.QuotaUser, ID: alice, Inodes: 5})

	items := []rpc.CreateReq{
		{Parent: mine, Name: "a", Mode: 0o640, Exclusive: true},
		{Parent: mine, Name: "b", Mode: 0o644, Exclusive: true, Layout: "width=2,unit=64K"},
		{Parent: mine, Name: "a", Mode: 0o644, Exclusive: true}, // duplicate of item 0
		{Parent: mine, Name: "x/y", Mode: 0o644, Exclusive: true},
		{Parent: mine, Name: "old", Mode: 0o644},                  // open of an existing file
		{Parent: closed, Name: "c", Mode: 0o644, Exclusive: true}, // root's 0755 directory
		{Parent: mine, Name: "c", Mode: 0o644, Exclusive: true},
		{Parent: mine, Name: "d", Mode: 0o644, Exclusive: true}, // the sixth inode: past the quota
	}
	before := m.node.raft.LastIndex()
	creates, failed := m.met.named("create").total.Load(), m.met.named("create").errors.Load()
	resp, err := callAs[rpc.CreateManyResp](m, as, rpc.MCreateMany, &rpc.CreateManyReq{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != len(items) {
		t.Fatalf("%d results for %d items", len(resp.Items), len(items))
	}
	want := []syscall.Errno{0, 0, syscall.EEXIST, syscall.EINVAL, 0, syscall.EACCES, 0, syscall.EDQUOT}
	for i, it := range resp.Items {
		r, err := it.Result()
		if errnoOf(err) != want[i] {
			t.Fatalf("item %d (%q in %d): %v, want errno %d", i, items[i].Name, items[i].Parent, err, want[i])
		}
		if err != nil {
			if it.Msg == "" {
				t.Errorf("item %d failed with errno %d and no message", i, it.Errno)
			}
			continue
		}
		switch {
		case items[i].Name == "old":
			if r.Created || r.Attr.Ino != old.Attr.Ino {
				t.Errorf("open of old: %+v, want inode %d not created", r, old.Attr.Ino)
			}
		case !r.Created || r.Attr.Uid != alice || r.Attr.Mode != rpc.TypeFile|items[i].Mode:
			t.Errorf("item %d: %+v, want a new file of uid %d mode %o", i, r, alice, items[i].Mode)
		}
		if got := must[rpc.AttrResp](m, rpc.MLookup, &rpc.EntryReq{Parent: mine, Name: items[i].Name}).Attr.Ino; got != r.Attr.Ino {
			t.Errorf("lookup %q: inode %d, the create answered %d", items[i].Name, got, r.Attr.Ino)
		}
	}
	lay := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: resp.Items[1].Attr.Ino})
	if len(lay.Layout.Targets) != 2 || !strings.Contains(lay.Layout.Spec, "width=2") || !strings.Contains(lay.Layout.Spec, "unit=64K") {
		t.Errorf("layout of b: %+v, want width 2, unit 64K", lay.Layout)
	}
	if n, e := m.met.named("create").total.Load()-creates, m.met.named("create").errors.Load()-failed; n != uint64(len(items)) || e != 4 {
		t.Errorf("metrics count %d creates, %d failed; want %d and 4", n, e, len(items))
	}
	// Only the three new files, and the duplicate the FSM refused, are in
	// the log: the items refused before raft cost nothing.
	if n := loggedCommands(t, m, before); n[cmdCreate] != 4 {
		t.Errorf("creates logged: %d, want 4 (a, b, the duplicate of a, c)", n[cmdCreate])
	}

	// Too many items is refused whole.
	many := make([]rpc.CreateReq, rpc.MaxCreateMany+1)
	for i := range many {
		many[i] = rpc.CreateReq{Parent: mine, Name: "n" + strings.Repeat("x", i%7), Mode: 0o644}
	}
	if _, err := call[rpc.CreateManyResp](m, rpc.MCreateMany, &rpc.CreateManyReq{Items: many}); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("%d items: %v, want EINVAL", len(many), err)
	}
}
