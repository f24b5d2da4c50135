package mds

import (
	"errors"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestMknod: the MDS makes each special file with its type, permissions
// and device number, and refuses before raft a mknod that is not one
// (EINVAL) and a device node made by a user who is not root (EPERM); the
// FSM refuses the same, should a leader that did not check log them.
func TestMknod(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	alice := rpc.Cred{Uid: 61000, Gid: 61000}
	must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: rpc.RootIno, Valid: rpc.SetMode, Mode: 0o1777})
	for _, tc := range []struct {
		name string
		mode uint32
		rdev uint32
		want uint32 // rdev
	}{
		{"fifo", rpc.TypeFifo | 0o640, 0, 0},
		{"char", rpc.TypeChar | 0o600, rpc.Mkdev(1, 3), rpc.Mkdev(1, 3)},
		{"block", rpc.TypeBlock | 0o660, rpc.Mkdev(259, 70000), rpc.Mkdev(259, 70000)},
		{"socket", rpc.TypeSocket | 0o755, 7, 0}, // Linux drops the device number of a socket
	} {
		a := must[rpc.AttrResp](m, rpc.MMknod, &rpc.MknodReq{Parent: rpc.RootIno, Name: tc.name, Mode: tc.mode, Rdev: tc.rdev}).Attr
		if a.Mode != tc.mode || a.Rdev != tc.want || a.Nlink != 1 || a.Size != 0 {
			t.Errorf("mknod %s: mode %#o rdev %#x nlink %d size %d, want %#o %#x 1 0", tc.name, a.Mode, a.Rdev, a.Nlink, a.Size, tc.mode, tc.want)
		}
		if got := must[rpc.AttrResp](m, rpc.MLookup, &rpc.EntryReq{Parent: rpc.RootIno, Name: tc.name}).Attr; got != a {
			t.Errorf("lookup %s: %+v, want %+v", tc.name, got, a)
		}
	}
	if rpc.Major(rpc.Mkdev(259, 70000)) != 259 || rpc.Minor(rpc.Mkdev(259, 70000)) != 70000 {
		t.Errorf("Mkdev(259, 70000) splits into %d,%d", rpc.Major(rpc.Mkdev(259, 70000)), rpc.Minor(rpc.Mkdev(259, 70000)))
	}
	if a, err := callAs[rpc.AttrResp](m, alice, rpc.MMknod, &rpc.MknodReq{Parent: rpc.RootIno, Name: "alice-fifo", Mode: rpc.TypeFifo | 0o600}); err != nil || a.Attr.Uid != alice.Uid {
		t.Errorf("a FIFO made by a user: %+v, %v", a, err)
	}

	before := m.node.raft.LastIndex()
	for _, r := range []struct {
		what string
		req  *rpc.MknodReq
		want syscall.Errno
	}{
		{"regular file", &rpc.MknodReq{Parent: rpc.RootIno, Name: "r", Mode: rpc.TypeFile | 0o644}, syscall.EINVAL},
		{"directory", &rpc.MknodReq{Parent: rpc.RootIno, Name: "d", Mode: rpc.TypeDir | 0o755}, syscall.EINVAL},
		{"no type", &rpc.MknodReq{Parent: rpc.RootIno, Name: "n", Mode: 0o644}, syscall.EINVAL},
		{"unknown type", &rpc.MknodReq{Parent: rpc.RootIno, Name: "u", Mode: 0o070000}, syscall.EINVAL},
		{"character device by a user", &rpc.MknodReq{Parent: rpc.RootIno, Name: "c", Mode: rpc.TypeChar | 0o600, Rdev: rpc.Mkdev(1, 3)}, syscall.EPERM},
		{"block device by a user", &rpc.MknodReq{Parent: rpc.RootIno, Name: "b", Mode: rpc.TypeBlock | 0o600}, syscall.EPERM},
	} {
		if _, err := callAs[rpc.AttrResp](m, alice, rpc.MMknod, r.req); !errors.Is(err, r.want) {
			t.Errorf("mknod of a %s: %v, want %v", r.what, err, r.want)
		}
	}
	after := m.node.raft.LastIndex()
	for i := before + 1; i <= after; i++ {
		var l raft.Log
		if err := m.node.wal.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if l.Type == raft.LogCommand && len(l.Data) > 0 && cmdType(l.Data[0]) == cmdMknod {
			t.Errorf("a refused mknod cost log space: entry %d", i)
		}
	}
	if _, err := callAs[rpc.AttrResp](m, alice, rpc.MMknod, &rpc.MknodReq{Parent: rpc.RootIno, Name: "alice-fifo", Mode: rpc.TypeFifo | 0o600}); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("mknod of an existing name: %v, want EEXIST", err)
	}

	st := m.fsm
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range []*mknodCmd{
		{Parent: rpc.RootIno, Name: "x", Mode: rpc.TypeFile | 0o644},
		{Parent: rpc.RootIno, Name: "y", Mode: rpc.TypeFifo | 0o644, Rdev: 5},
	} {
		if r := st.st.apply(cmdMknod, c); errnoOf(r.err) != syscall.EINVAL {
			t.Errorf("the FSM applied mknod %+v: %v, want EINVAL", c, r.err)
		}
	}
}
