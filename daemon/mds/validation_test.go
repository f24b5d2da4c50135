package mds

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// logBytes returns the last raft index of m and the bytes of the entries
// after index from.
func logBytes(t *testing.T, m *tmds, from uint64) (last uint64, n int) {
	t.Helper()
	last, err := m.node.wal.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	for i := from + 1; i <= last; i++ {
		var l raft.Log
		if err := m.node.wal.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		n += len(l.Data)
	}
	return last, n
}

// TestRefusedCommandsCostNoLog: 100 symbolic links with 900 KB targets
// (ENAMETOOLONG) and every other command that breaks a limit of its own are
// refused by the leader before raft: the log grows by less than 1 MB (it
// grew by the 90 MB of the refused targets when only the FSM checked).
func TestRefusedCommandsCostNoLog(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	dir := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "d", Mode: 0o755}).Attr.Ino
	file := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: dir, Name: "f", Mode: 0o644, Exclusive: true})
	start, _ := logBytes(t, m, 0)

	target := strings.Repeat("t", 900_000)
	for i := range 100 {
		_, err := call[rpc.AttrResp](m, rpc.MSymlink, &rpc.SymlinkReq{Parent: dir, Name: fmt.Sprintf("l%d", i), Target: target})
		if errnoOf(err) != syscall.ENAMETOOLONG {
			t.Fatalf("symlink %d with a 900 KB target: %v, want ENAMETOOLONG", i, err)
		}
	}
	if last, n := logBytes(t, m, start); n >= 1<<20 {
		t.Fatalf("100 refused symlinks took %d bytes of raft log (%d entries)", n, last-start)
	}
	for _, tc := range []struct {
		what   string
		method string
		req    any
		want   syscall.Errno
	}{
		{"symlink target with NUL", rpc.MSymlink, &rpc.SymlinkReq{Parent: dir, Name: "n", Target: "a\x00b"}, syscall.EINVAL},
		{"empty symlink target", rpc.MSymlink, &rpc.SymlinkReq{Parent: dir, Name: "e"}, syscall.ENOENT},
		{"setattr unknown bits", rpc.MSetattr, &rpc.SetattrReq{Ino: file.Attr.Ino, Valid: 1 << 20}, syscall.EINVAL},
		{"rename flags", rpc.MRename, &rpc.RenameReq{OldParent: dir, OldName: "f", NewParent: dir, NewName: "g", Flags: 3}, syscall.EINVAL},
		{"xattr value", rpc.MSetXattr, &rpc.XattrReq{Ino: file.Attr.Ino, Name: "user.big", Value: make([]byte, 900_000)}, syscall.E2BIG},
		{"xattr flags", rpc.MSetXattr, &rpc.XattrReq{Ino: file.Attr.Ino, Name: "user.x", Value: []byte("v"), Flags: 3}, syscall.EINVAL},
	} {
		for range 10 {
			if _, err := call[rpc.Empty](m, tc.method, tc.req); errnoOf(err) != tc.want {
				t.Fatalf("%s: %v, want %v", tc.what, err, tc.want)
			}
		}
	}
	if last, n := logBytes(t, m, start); n >= 1<<20 {
		t.Fatalf("refused commands took %d bytes of raft log (%d entries)", n, last-start)
	}
	// And the FSM refuses the same commands, should a leader that did not
	// check have logged them.
	st := m.fsm
	st.mu.Lock()
	defer st.mu.Unlock()
	if r := st.st.apply(cmdSymlink, &symlinkCmd{Parent: dir, Name: "x", Target: target}); errnoOf(r.err) != syscall.ENAMETOOLONG {
		t.Errorf("FSM symlink with a long target: %v", r.err)
	}
	if r := st.st.apply(cmdMkdir, &mkdirCmd{Parent: dir, Name: "x", Mode: 1 << 18}); errnoOf(r.err) != syscall.EINVAL {
		t.Errorf("FSM mkdir with mode bits: %v", r.err)
	}
}

// TestXattrLimits: an inode holds at most maxXattrs extended attributes
// and maxXattrBytes of names and values (ENOSPC past either, as ext4);
// replacing one within the limits works, removing one makes room; a value
// over 64 KiB is E2BIG.
func TestXattrLimits(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	ino := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "f", Mode: 0o644, Exclusive: true}).Attr.Ino
	set := func(name string, n int) error {
		_, err := call[rpc.Empty](m, rpc.MSetXattr, &rpc.XattrReq{Ino: ino, Name: name, Value: make([]byte, n)})
		return err
	}
	if err := set("user.big", maxXattrValue+1); errnoOf(err) != syscall.E2BIG {
		t.Fatalf("value of 64 KiB + 1: %v, want E2BIG", err)
	}
	// Size: four values of 64 KiB - 100 fit, a fifth does not.
	for i := range 4 {
		if err := set(fmt.Sprintf("user.v%d", i), maxXattrValue-100); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
	}
	if err := set("user.v4", maxXattrValue-100); errnoOf(err) != syscall.ENOSPC {
		t.Fatalf("fifth 64 KiB value: %v, want ENOSPC", err)
	}
	if err := set("user.v0", 10); err != nil {
		t.Fatalf("replace with a smaller value: %v", err)
	}
	if err := set("user.v4", maxXattrValue-100); err != nil {
		t.Fatalf("after shrinking one: %v", err)
	}
	for i := range 5 {
		if _, err := call[rpc.Empty](m, rpc.MRemoveXattr, &rpc.XattrReq{Ino: ino, Name: fmt.Sprintf("user.v%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Count.
	for i := range maxXattrs {
		if err := set(fmt.Sprintf("user.n%d", i), 1); err != nil {
			t.Fatalf("xattr %d: %v", i, err)
		}
	}
	err := set("user.one-more", 1)
	if errnoOf(err) != syscall.ENOSPC || !strings.Contains(err.Error(), "extended attributes") {
		t.Fatalf("xattr %d: %v, want ENOSPC", maxXattrs+1, err)
	}
	if err := set("user.n0", 5); err != nil {
		t.Fatalf("replace at the count limit: %v", err)
	}
	names := must[rpc.ListXattrResp](m, rpc.MListXattr, &rpc.XattrReq{Ino: ino}).Names
	if len(names) != maxXattrs+1 { // and the layout xattr of a file
		t.Fatalf("listxattr: %d names, want %d", len(names), maxXattrs+1)
	}
}
