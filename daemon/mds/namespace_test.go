package mds

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// dump lists the whole namespace with every attribute (times included), so
// that a failed call can be shown to have changed nothing.
func (m *tmds) dump() string {
	m.t.Helper()
	var b strings.Builder
	var walk func(path string, ino uint64)
	walk = func(path string, ino uint64) {
		a := must[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: ino}).Attr
		x := must[rpc.ListXattrResp](m, rpc.MListXattr, &rpc.XattrReq{Ino: ino})
		fmt.Fprintf(&b, "%s %+v %v\n", path, a, x.Names)
		if !a.IsDir() {
			return
		}
		for _, e := range must[rpc.ReaddirResp](m, rpc.MReaddir, &rpc.ReaddirReq{Ino: ino}).Entries {
			walk(path+"/"+e.Name, e.Attr.Ino)
		}
	}
	walk("", rpc.RootIno)
	return b.String()
}

// fixture builds /d/{f,sub/g}, /e (empty), /file, /link -> d and returns
// their inode numbers by path.
func (m *tmds) fixture() map[string]uint64 {
	m.t.Helper()
	ino := map[string]uint64{"/": rpc.RootIno}
	mkdir := func(parent, name string) {
		ino[parent+name] = must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: ino[strings.TrimSuffix(parent, "/")+"/"], Name: name, Mode: 0o755}).Attr.Ino
	}
	create := func(parent, name string) {
		ino[parent+name] = must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: ino[strings.TrimSuffix(parent, "/")+"/"], Name: name, Mode: 0o644, Exclusive: true}).Attr.Ino
	}
	mkdir("/", "d")
	ino["/d/"] = ino["/d"]
	create("/d/", "f")
	mkdir("/d/", "sub")
	ino["/d/sub/"] = ino["/d/sub"]
	create("/d/sub/", "g")
	mkdir("/", "e")
	create("/", "file")
	ino["/link"] = must[rpc.AttrResp](m, rpc.MSymlink, &rpc.SymlinkReq{Parent: rpc.RootIno, Name: "link", Target: "d"}).Attr.Ino
	return ino
}

func TestNamespaceErrors(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	ino := m.fixture()
	long := strings.Repeat("x", 256)
	tests := []struct {
		name   string
		method string
		req    any
		errno  syscall.Errno
		msg    string // the message names this
	}{
		{"lookup missing", rpc.MLookup, &rpc.EntryReq{Parent: rpc.RootIno, Name: "nope"}, syscall.ENOENT, "nope"},
		{"lookup in a file", rpc.MLookup, &rpc.EntryReq{Parent: ino["/file"], Name: "x"}, syscall.ENOTDIR, ""},
		{"getattr missing", rpc.MGetattr, &rpc.InoReq{Ino: 9999}, syscall.ENOENT, "9999"},
		{"create exclusive existing", rpc.MCreate, &rpc.CreateReq{Parent: ino["/d"], Name: "f", Exclusive: true}, syscall.EEXIST, `"f"`},
		{"create over a dir", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "d"}, syscall.EISDIR, `"d"`},
		{"create over a symlink", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "link"}, syscall.EEXIST, `"link"`},
		{"create in missing dir", rpc.MCreate, &rpc.CreateReq{Parent: 9999, Name: "x"}, syscall.ENOENT, "9999"},
		{"create in a file", rpc.MCreate, &rpc.CreateReq{Parent: ino["/file"], Name: "x"}, syscall.ENOTDIR, ""},
		{"create with slash", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "a/b"}, syscall.EINVAL, "a/b"},
		{"create dot", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "."}, syscall.EINVAL, ""},
		{"mkdir dotdot", rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: ".."}, syscall.EINVAL, ""},
		{"mkdir empty name", rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: ""}, syscall.EINVAL, ""},
		{"mkdir long name", rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: long}, syscall.ENAMETOOLONG, "255"},
		{"mkdir existing", rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "file"}, syscall.EEXIST, `"file"`},
		{"create bad layout", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x", Layout: "width=zero"}, syscall.EINVAL, "width"},
		{"create rs too wide", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x", Layout: "scheme=rs:4+2"}, syscall.ENOSPC, "layout scheme rs:4+2 needs 6 data servers on distinct nodes, only 4 are up"},
		{"create rs width not K", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x", Layout: "width=3,scheme=rs:2+1"}, syscall.EINVAL, "width 3 does not match scheme rs:2+1"},
		{"create too wide", rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x", Layout: "width=5"}, syscall.ENOSPC, "only 4 are up"},
		{"symlink empty target", rpc.MSymlink, &rpc.SymlinkReq{Parent: rpc.RootIno, Name: "x"}, syscall.ENOENT, `"x"`},
		{"readlink of a file", rpc.MReadlink, &rpc.InoReq{Ino: ino["/file"]}, syscall.EINVAL, ""},
		{"link a dir", rpc.MLink, &rpc.LinkReq{Ino: ino["/d"], NewParent: rpc.RootIno, NewName: "x"}, syscall.EPERM, "directory"},
		{"link onto existing", rpc.MLink, &rpc.LinkReq{Ino: ino["/file"], NewParent: ino["/d"], NewName: "f"}, syscall.EEXIST, `"f"`},
		{"link missing inode", rpc.MLink, &rpc.LinkReq{Ino: 9999, NewParent: rpc.RootIno, NewName: "x"}, syscall.ENOENT, "9999"},
		{"unlink a dir", rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: "e"}, syscall.EISDIR, `"e"`},
		{"unlink missing", rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: "nope"}, syscall.ENOENT, "nope"},
		{"rmdir not empty", rpc.MRmdir, &rpc.EntryReq{Parent: rpc.RootIno, Name: "d"}, syscall.ENOTEMPTY, `"d"`},
		{"rmdir a file", rpc.MRmdir, &rpc.EntryReq{Parent: rpc.RootIno, Name: "file"}, syscall.ENOTDIR, `"file"`},
		{"rmdir missing", rpc.MRmdir, &rpc.EntryReq{Parent: rpc.RootIno, Name: "nope"}, syscall.ENOENT, "nope"},
		{"rename into itself", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "d", NewParent: ino["/d"], NewName: "x"}, syscall.EINVAL, `"d"`},
		{"rename into descendant", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "d", NewParent: ino["/d/sub"], NewName: "x"}, syscall.EINVAL, "subdirectory"},
		{"rename file over dir", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "file", NewParent: rpc.RootIno, NewName: "e"}, syscall.EISDIR, `"e"`},
		{"rename dir over file", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "e", NewParent: rpc.RootIno, NewName: "file"}, syscall.ENOTDIR, `"file"`},
		{"rename dir over non-empty", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "e", NewParent: rpc.RootIno, NewName: "d"}, syscall.ENOTEMPTY, `"d"`},
		{"rename missing", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "nope", NewParent: rpc.RootIno, NewName: "x"}, syscall.ENOENT, "nope"},
		{"rename noreplace", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "file", NewParent: ino["/d"], NewName: "f", Flags: rpc.RenameNoReplace}, syscall.EEXIST, `"f"`},
		{"exchange with missing", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "file", NewParent: rpc.RootIno, NewName: "nope", Flags: rpc.RenameExchange}, syscall.ENOENT, "nope"},
		{"exchange with ancestor", rpc.MRename, &rpc.RenameReq{OldParent: ino["/d"], OldName: "sub", NewParent: rpc.RootIno, NewName: "d", Flags: rpc.RenameExchange}, syscall.EINVAL, ""},
		{"rename bad flags", rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "file", NewParent: rpc.RootIno, NewName: "x", Flags: 3}, syscall.EINVAL, "flags"},
		{"truncate a dir", rpc.MSetattr, &rpc.SetattrReq{Ino: ino["/d"], Valid: rpc.SetSize}, syscall.EISDIR, ""},
		{"setattr missing", rpc.MSetattr, &rpc.SetattrReq{Ino: 9999, Valid: rpc.SetMode}, syscall.ENOENT, "9999"},
		{"readdir a file", rpc.MReaddir, &rpc.ReaddirReq{Ino: ino["/file"]}, syscall.ENOTDIR, ""},
		{"walk missing", rpc.MWalk, &rpc.WalkReq{Path: "/d/nope"}, syscall.ENOENT, "nope"},
		{"walk through a file", rpc.MWalk, &rpc.WalkReq{Path: "/file/x"}, syscall.ENOTDIR, "/file/x"},
		{"walk relative", rpc.MWalk, &rpc.WalkReq{Path: "d/f"}, syscall.EINVAL, "absolute"},
		{"getxattr missing", rpc.MGetXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "user.nope"}, syscall.ENODATA, "user.nope"},
		{"setxattr bad namespace", rpc.MSetXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "system.x", Value: []byte("v")}, syscall.EOPNOTSUPP, "system.x"},
		{"setxattr replace missing", rpc.MSetXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "user.x", Value: []byte("v"), Flags: rpc.XattrReplace}, syscall.ENODATA, "user.x"},
		{"setxattr too big", rpc.MSetXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "user.x", Value: make([]byte, 64<<10+1)}, syscall.E2BIG, "user.x"},
		{"setxattr long name", rpc.MSetXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "user." + long, Value: []byte("v")}, syscall.ERANGE, ""},
		{"removexattr missing", rpc.MRemoveXattr, &rpc.XattrReq{Ino: ino["/file"], Name: "user.nope"}, syscall.ENODATA, "user.nope"},
		{"layoutget a dir", rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino["/d"]}, syscall.EISDIR, ""},
		{"layoutget a symlink", rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino["/link"]}, syscall.EINVAL, ""},
		{"layoutcommit a dir", rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: ino["/d"], Gen: 1, End: 10}, syscall.EINVAL, ""},
		{"heartbeat without id", rpc.MHeartbeat, &rpc.HeartbeatReq{Addr: "x"}, syscall.EINVAL, "id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := m.dump()
			err := m.c.Call(credCtx(t.Context(), tc.req), m.Addr(), tc.method, tc.req, new(anyResp))
			if got := errnoOf(err); got != tc.errno {
				t.Fatalf("errno %v (%v), want %v", got, err, tc.errno)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not name %q", err.Error(), tc.msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q is not one line", err.Error())
			}
			if after := m.dump(); after != before {
				t.Fatalf("a failed call changed the namespace:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// anyResp swallows any successful reply; the error tests only need errors.
type anyResp struct{}

func TestWalkSymlinks(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	ino := m.fixture()
	sym := func(parent uint64, name, target string) {
		must[rpc.AttrResp](m, rpc.MSymlink, &rpc.SymlinkReq{Parent: parent, Name: name, Target: target})
	}
	sym(ino["/d/sub"], "up", "../f")        // relative, from the link's directory
	sym(ino["/d/sub"], "abs", "/d/sub/g")   // absolute
	sym(rpc.RootIno, "loop1", "loop2")      // a cycle
	sym(rpc.RootIno, "loop2", "/loop1")     //
	sym(rpc.RootIno, "tofile", "file/x")    // through a file
	sym(ino["/d"], "dotdot", "../link/sub") // chains: /link -> d
	tests := []struct {
		path   string
		follow bool
		want   uint64
		errno  syscall.Errno
	}{
		{"/", false, rpc.RootIno, 0},
		{"/d/f", false, ino["/d/f"], 0},
		{"/link/f", false, ino["/d/f"], 0},
		{"/link", false, ino["/link"], 0},
		{"/link", true, ino["/d"], 0},
		{"/d/sub/up", true, ino["/d/f"], 0},
		{"/link/sub/abs", true, ino["/d/sub/g"], 0},
		{"/d/dotdot/g", false, ino["/d/sub/g"], 0},
		{"/d/./sub/../f", false, ino["/d/f"], 0},
		{"/../d", false, ino["/d"], 0},
		{"//d///f", false, ino["/d/f"], 0},
		{"/loop1", false, 0, 0}, // the link itself: checked below
		{"/loop1", true, 0, syscall.ELOOP},
		{"/loop1/x", false, 0, syscall.ELOOP},
		{"/tofile", true, 0, syscall.ENOTDIR},
		{"/d/f/x", false, 0, syscall.ENOTDIR},
	}
	for _, tc := range tests {
		r, err := call[rpc.AttrResp](m, rpc.MWalk, &rpc.WalkReq{Path: tc.path, Follow: tc.follow})
		if got := errnoOf(err); got != tc.errno {
			t.Errorf("walk %s follow=%v: errno %v (%v), want %v", tc.path, tc.follow, got, err, tc.errno)
			continue
		}
		if err == nil && tc.want != 0 && r.Attr.Ino != tc.want {
			t.Errorf("walk %s follow=%v = inode %d, want %d", tc.path, tc.follow, r.Attr.Ino, tc.want)
		}
		if err == nil && tc.want == 0 && !r.Attr.IsSymlink() {
			t.Errorf("walk %s = %+v, want the link itself", tc.path, r.Attr)
		}
	}
}

func TestRenameSemantics(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	ino := m.fixture()
	getattr := func(i uint64) rpc.Attr { return must[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: i}).Attr }
	rename := func(op uint64, on string, np uint64, nn string, flags uint32) {
		t.Helper()
		must[rpc.Empty](m, rpc.MRename, &rpc.RenameReq{OldParent: op, OldName: on, NewParent: np, NewName: nn, Flags: flags})
	}
	lookup := func(p uint64, name string) (uint64, error) {
		r, err := call[rpc.AttrResp](m, rpc.MLookup, &rpc.EntryReq{Parent: p, Name: name})
		if err != nil {
			return 0, err
		}
		return r.Attr.Ino, nil
	}

	// Onto itself: nothing changes, not even times.
	before := m.dump()
	rename(rpc.RootIno, "file", rpc.RootIno, "file", 0)
	if after := m.dump(); after != before {
		t.Fatalf("rename onto itself changed the namespace:\n%s\n%s", before, after)
	}

	// File over file, across directories: the target's inode goes, times move.
	d0 := getattr(ino["/d"])
	rename(rpc.RootIno, "file", ino["/d"], "f", 0)
	if got, _ := lookup(ino["/d"], "f"); got != ino["/file"] {
		t.Fatalf("d/f = %d after rename, want %d", got, ino["/file"])
	}
	if _, err := call[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: ino["/d/f"]}); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("replaced inode: %v, want ENOENT", err)
	}
	if _, err := lookup(rpc.RootIno, "file"); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("old name: %v, want ENOENT", err)
	}
	if d1, f := getattr(ino["/d"]), getattr(ino["/file"]); d1.Mtime <= d0.Mtime || f.Ctime <= d0.Mtime {
		t.Errorf("times not updated: dir mtime %d -> %d, file ctime %d", d0.Mtime, d1.Mtime, f.Ctime)
	}

	// Empty dir over empty dir, across parents: link counts follow.
	must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: ino["/d"], Name: "empty", Mode: 0o755})
	root0, d0 := getattr(rpc.RootIno), getattr(ino["/d"])
	rename(rpc.RootIno, "e", ino["/d"], "empty", 0)
	if root1, d1 := getattr(rpc.RootIno), getattr(ino["/d"]); root1.Nlink != root0.Nlink-1 || d1.Nlink != d0.Nlink {
		t.Errorf("nlink root %d->%d (want -1), d %d->%d (want same)", root0.Nlink, root1.Nlink, d0.Nlink, d1.Nlink)
	}
	if got, _ := lookup(ino["/d"], "empty"); got != ino["/e"] {
		t.Fatalf("d/empty = %d, want %d", got, ino["/e"])
	}

	// Exchange a file and a directory in different parents.
	rename(ino["/d"], "f", ino["/d/sub"], "g", rpc.RenameExchange)
	if a, _ := lookup(ino["/d"], "f"); a != ino["/d/sub/g"] {
		t.Errorf("exchange: d/f = %d, want %d", a, ino["/d/sub/g"])
	}
	if b, _ := lookup(ino["/d/sub"], "g"); b != ino["/file"] {
		t.Errorf("exchange: d/sub/g = %d, want %d", b, ino["/file"])
	}
	rename(ino["/d"], "empty", rpc.RootIno, "link", rpc.RenameExchange)
	if w := must[rpc.AttrResp](m, rpc.MWalk, &rpc.WalkReq{Path: "/link"}); w.Attr.Ino != ino["/e"] {
		t.Errorf("exchange dir and symlink: /link = %+v", w.Attr)
	}
	if d := getattr(ino["/e"]); d.Nlink != 2 {
		t.Errorf("moved dir nlink %d", d.Nlink)
	}
	// The moved directory's parent is its new one.
	if w := must[rpc.AttrResp](m, rpc.MWalk, &rpc.WalkReq{Path: "/link/../d"}); w.Attr.Ino != ino["/d"] {
		t.Errorf("/link/.. is not the root: %+v", w.Attr)
	}
}

func TestSetattrAndReaddir(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	f := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "f", Mode: 0o644, Cred: rpc.Cred{Uid: 5, Gid: 6}}).Attr
	if f.Uid != 5 || f.Gid != 6 || f.Nlink != 1 || f.Gen != 1 {
		t.Fatalf("created %+v", f)
	}
	a := must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: f.Ino, Valid: rpc.SetMode | rpc.SetUid | rpc.SetAtime | rpc.SetMtime,
		Mode: rpc.TypeDir | 0o4711, Uid: 9, Atime: 111, Mtime: 222}).Attr
	if a.Mode != rpc.TypeFile|0o4711 || a.Uid != 9 || a.Gid != 6 || a.Atime != 111 || a.Mtime != 222 || a.Ctime <= f.Ctime {
		t.Fatalf("setattr = %+v", a)
	}
	a = must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: f.Ino, Valid: rpc.SetSize, Size: 12345}).Attr
	if a.Size != 12345 || a.Mtime == 222 {
		t.Fatalf("truncate = %+v", a)
	}

	for i := 0; i < 25; i++ {
		must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: fmt.Sprintf("d%02d", i), Mode: 0o755})
	}
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		r := must[rpc.ReaddirResp](m, rpc.MReaddir, &rpc.ReaddirReq{Ino: rpc.RootIno, After: after, Limit: 10})
		for _, e := range r.Entries {
			names = append(names, e.Name)
			after = e.Name
		}
		if !r.More {
			if pages != 2 || len(r.Entries) != 6 {
				t.Errorf("last page %d has %d entries", pages, len(r.Entries))
			}
			break
		}
	}
	if len(names) != 26 || names[0] != "d00" || names[24] != "d24" || names[25] != "f" {
		t.Fatalf("readdir = %v", names)
	}
	all := must[rpc.ReaddirResp](m, rpc.MReaddir, &rpc.ReaddirReq{Ino: rpc.RootIno})
	if len(all.Entries) != 26 || all.More || all.Entries[25].Attr.Ino != f.Ino {
		t.Fatalf("readdir with the default limit: %d entries, more %v", len(all.Entries), all.More)
	}
	if root := must[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: rpc.RootIno}).Attr; root.Nlink != 27 {
		t.Errorf("root nlink %d, want 27", root.Nlink)
	}
}
