package mds

import (
	"bytes"
	"io"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestQuota: usage follows creates, commits, truncates, chowns, project
// moves and removals; creates past an inode limit and commits or
// truncates past a byte limit are EDQUOT, refused before the log; limits
// and usage survive a snapshot and restore.
func TestQuota(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	const alice = 61000
	as := rpc.Cred{Uid: alice, Gid: alice}
	quota := func(kind uint8, id uint32) *rpc.QuotaResp {
		return must[rpc.QuotaResp](m, rpc.MQuotaGet, &rpc.QuotaReq{Kind: kind, ID: id})
	}
	must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: rpc.RootIno, Valid: rpc.SetMode, Mode: 0o1777})
	dir := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "proj", Mode: 0o777}).Attr.Ino
	must[rpc.AttrResp](m, rpc.MProjectSet, &rpc.ProjectReq{Ino: dir, Project: 7})
	must[rpc.QuotaResp](m, rpc.MQuotaSet, &rpc.QuotaReq{Kind: rpc.QuotaUser, ID: alice, Inodes: 3, Bytes: 1 << 20})
	must[rpc.QuotaResp](m, rpc.MQuotaSet, &rpc.QuotaReq{Kind: rpc.QuotaProject, ID: 7, Inodes: 10, Bytes: 3 << 20})

	// Only root sets quotas and projects.
	if _, err := callAs[rpc.QuotaResp](m, as, rpc.MQuotaSet, &rpc.QuotaReq{Kind: rpc.QuotaUser, ID: alice, Inodes: 100}); errnoOf(err) != syscall.EPERM {
		t.Fatalf("quota set by a user: %v, want EPERM", err)
	}
	var files []uint64
	for _, name := range []string{"a", "b", "c"} {
		f, err := callAs[rpc.CreateResp](m, as, rpc.MCreate, &rpc.CreateReq{Parent: dir, Name: name, Mode: 0o644, Exclusive: true})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		files = append(files, f.Attr.Ino)
	}
	if q := quota(rpc.QuotaUser, alice); q.Inodes != 3 || q.Bytes != 0 || q.InodesLimit != 3 {
		t.Fatalf("alice after 3 creates: %+v", q)
	}
	if q := quota(rpc.QuotaProject, 7); q.Inodes != 4 { // the directory, root's, is the project's too
		t.Fatalf("project 7 after 3 creates: %+v", q)
	}
	before := m.node.raft.LastIndex()
	if _, err := callAs[rpc.CreateResp](m, as, rpc.MCreate, &rpc.CreateReq{Parent: dir, Name: "d", Mode: 0o644, Exclusive: true}); errnoOf(err) != syscall.EDQUOT {
		t.Fatalf("fourth create: %v, want EDQUOT", err)
	}
	if _, err := callAs[rpc.AttrResp](m, as, rpc.MMkdir, &rpc.MkdirReq{Parent: dir, Name: "e", Mode: 0o755}); errnoOf(err) != syscall.EDQUOT {
		t.Fatalf("mkdir past the inode limit: %v, want EDQUOT", err)
	}
	// Bytes: a commit within the limit, then one past it.
	gen := quotaGen(t, m, files[0])
	must[rpc.AttrResp](m, rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: files[0], Gen: gen, End: 600 << 10})
	if _, err := call[rpc.AttrResp](m, rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: files[1], Gen: quotaGen(t, m, files[1]), End: 600 << 10}); errnoOf(err) != syscall.EDQUOT {
		t.Fatalf("commit past the byte limit: %v, want EDQUOT", err)
	}
	if _, err := callAs[rpc.AttrResp](m, as, rpc.MSetattr, &rpc.SetattrReq{Ino: files[1], Valid: rpc.SetSize, Size: 2 << 20}); errnoOf(err) != syscall.EDQUOT {
		t.Fatalf("truncate up past the byte limit: %v, want EDQUOT", err)
	}
	if n := loggedCommands(t, m, before); n[cmdCreate]+n[cmdMkdir]+n[cmdSetattr] != 0 || n[cmdCommit] != 1 {
		t.Fatalf("refused creates, commits and truncates cost log space: commands logged by type %v, want one commit (cmd %d) only", n, cmdCommit)
	}
	if q := quota(rpc.QuotaUser, alice); q.Bytes != 600<<10 || q.Inodes != 3 {
		t.Fatalf("alice: %+v", q)
	}
	// The room a mount asks for at a write that grows a file: the least
	// of the owner's (1 MiB - 600 KiB) and the project's (3 MiB - 600 KiB).
	if r := must[rpc.QuotaRoomResp](m, rpc.MQuotaRoom, &rpc.QuotaRoomReq{Ino: files[0]}); r.Size != 600<<10 || r.Room != 424<<10 {
		t.Fatalf("quota room of a 600 KiB file of alice: %+v, want size 600 KiB, room 424 KiB", r)
	}
	if _, err := callAs[rpc.QuotaRoomResp](m, rpc.Cred{Uid: 4321, Gid: 4321}, rpc.MQuotaRoom, &rpc.QuotaRoomReq{Ino: files[0]}); errnoOf(err) != syscall.EACCES {
		t.Fatalf("quota room of alice's 0644 file asked by another user: %v, want EACCES", err)
	}
	if _, err := call[rpc.QuotaRoomResp](m, rpc.MQuotaRoom, &rpc.QuotaRoomReq{Ino: dir}); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("quota room of a directory: %v, want EINVAL", err)
	}
	// A chown moves the usage; an unlink frees it.
	must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: files[0], Valid: rpc.SetUid, Uid: 0})
	if q := quota(rpc.QuotaUser, alice); q.Bytes != 0 || q.Inodes != 2 {
		t.Fatalf("alice after chown to root: %+v", q)
	}
	must[rpc.Empty](m, rpc.MUnlink, &rpc.EntryReq{Parent: dir, Name: "b"})
	if q := quota(rpc.QuotaUser, alice); q.Inodes != 1 {
		t.Fatalf("alice after unlink: %+v", q)
	}
	if _, err := callAs[rpc.CreateResp](m, as, rpc.MCreate, &rpc.CreateReq{Parent: dir, Name: "d", Mode: 0o644, Exclusive: true}); err != nil {
		t.Fatalf("create after room was made: %v", err)
	}
	// A project move of a file.
	must[rpc.AttrResp](m, rpc.MProjectSet, &rpc.ProjectReq{Ino: files[0], Project: 8})
	if q := quota(rpc.QuotaProject, 8); q.Inodes != 1 || q.Bytes != 600<<10 {
		t.Fatalf("project 8: %+v", q)
	}

	// Snapshot and restore: the same limits and usage.
	m.fsm.mu.Lock()
	var b bytes.Buffer
	err := writeSnapshot(&b, m.fsm.st.capture())
	want := map[quotaKey]quotaUsage{}
	for k, v := range m.fsm.st.usage {
		want[k] = v
	}
	m.fsm.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	f := newFSM()
	if err := f.Restore(io.NopCloser(&b)); err != nil {
		t.Fatal(err)
	}
	if len(f.st.quotas) != 2 || len(f.st.usage) != len(want) {
		t.Fatalf("restored %d quotas, %d usages; want 2, %d", len(f.st.quotas), len(f.st.usage), len(want))
	}
	for k, v := range want {
		if f.st.usage[k] != v {
			t.Fatalf("restored usage of %+v = %+v, want %+v", k, f.st.usage[k], v)
		}
	}
}

func quotaGen(t *testing.T, m *tmds, ino uint64) uint64 {
	t.Helper()
	return must[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: ino}).Attr.Gen
}
