package mds

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// callAs makes one RPC acting for cred.
func callAs[Resp any](m *tmds, cred rpc.Cred, method string, req any) (*Resp, error) {
	resp := new(Resp)
	err := m.c.Call(rpc.WithCred(context.Background(), cred), m.Addr(), method, req, resp)
	return resp, err
}

// TestRefusedCostsNoLogSpace: a request the permission check refuses is
// answered by the leader before raft, so the log does not grow; and the
// same request from the owner goes through.
func TestRefusedCostsNoLogSpace(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	alice, bob := rpc.Cred{Uid: 61000, Gid: 61000}, rpc.Cred{Uid: 61001, Gid: 61001}
	must[rpc.AttrResp](m, rpc.MSetattr, &rpc.SetattrReq{Ino: rpc.RootIno, Valid: rpc.SetMode, Mode: 0o1777})
	f, err := callAs[rpc.CreateResp](m, alice, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "f", Mode: 0o644})
	if err != nil || f.Attr.Uid != alice.Uid || f.Attr.Gid != alice.Gid {
		t.Fatalf("create as alice: %+v, %v", f, err)
	}
	// The leader's own work (heartbeats, the rebuild manager) may append
	// entries meanwhile: what the refused requests must not append is an
	// entry of their own kinds.
	before := m.node.raft.LastIndex()
	refused := []struct {
		what   string
		method string
		req    any
		want   syscall.Errno
	}{
		{"unlink in a sticky directory", rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: "f"}, syscall.EPERM},
		{"chmod", rpc.MSetattr, &rpc.SetattrReq{Ino: f.Attr.Ino, Valid: rpc.SetMode, Mode: 0o666}, syscall.EPERM},
		{"truncate", rpc.MSetattr, &rpc.SetattrReq{Ino: f.Attr.Ino, Valid: rpc.SetSize}, syscall.EACCES},
		{"setxattr", rpc.MSetXattr, &rpc.XattrReq{Ino: f.Attr.Ino, Name: "user.a", Value: []byte("v")}, syscall.EACCES},
		{"open for writing", rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: f.Attr.Ino, Write: true}, syscall.EACCES},
		{"open for writing claiming a refresh", rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: f.Attr.Ino, Write: true, Refresh: true}, syscall.EACCES},
		{"open for writing claiming a create", rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: f.Attr.Ino, Write: true, Created: true}, syscall.EACCES},
	}
	for _, r := range refused {
		if _, err := callAs[rpc.Empty](m, bob, r.method, r.req); !errors.Is(err, r.want) {
			t.Errorf("%s as another user: %v, want %v", r.what, err, r.want)
		}
	}
	n := loggedCommands(t, m, before)
	for _, ty := range []cmdType{cmdUnlink, cmdSetattr, cmdSetXattr, cmdGrantHorizon} {
		if n[ty] != 0 {
			t.Errorf("a refused request cost log space: %d commands of type %d logged", n[ty], ty)
		}
	}
	if _, err := callAs[rpc.Empty](m, alice, rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: "f"}); err != nil {
		t.Errorf("unlink by the owner: %v", err)
	}
}
