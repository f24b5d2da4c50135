package mds

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/mungetest"
)

// as returns a context whose calls (with testClient's root node
// credential) act for uid and gid, as a trusted node's mount does for a
// local user.
func as(uid, gid uint32) context.Context {
	return identity.WithActor(context.Background(), identity.Actor{Uid: uid, Gid: gid})
}

// callCtx makes one RPC in ctx.
func callCtx[Resp any](m *tmds, ctx context.Context, method string, req any) (*Resp, error) {
	resp := new(Resp)
	if err := m.c.Call(ctx, m.Addr(), method, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// TestUnauthenticatedRefused: a raw RPC that claims uid 0 without a valid
// identity changes and reveals nothing; the health check still answers.
func TestUnauthenticatedRefused(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	raw := rpc.NewClient(rpc.ClientConfig{})
	defer raw.Close()
	forged := identity.NewNodeCredentials(bytes.Repeat([]byte{1}, 32), identity.RoleNode, "evil", "")
	forgedHdr, _ := forged.Header(context.Background())
	for _, hdr := range []string{"", forgedHdr, "StrataNode AAAA", "StrataSession " + strings.Repeat("A", 60)} {
		ctx := context.Background()
		if hdr != "" {
			ctx = rpc.WithAuthorization(ctx, hdr)
		}
		req := &rpc.CreateReq{Parent: rpc.RootIno, Name: "owned-by-root", Mode: 0o644, Cred: rpc.Cred{Uid: 0, Gid: 0}}
		err := raw.Call(ctx, m.Addr(), rpc.MCreate, req, &rpc.CreateResp{})
		if errnoOf(err) != syscall.EACCES {
			t.Errorf("create claiming uid 0 with credential %.20q: %v, want EACCES", hdr, err)
		}
		if err := raw.Call(ctx, m.Addr(), rpc.MGetattr, &rpc.InoReq{Ino: rpc.RootIno}, &rpc.AttrResp{}); errnoOf(err) != syscall.EACCES {
			t.Errorf("getattr with credential %.20q: %v, want EACCES", hdr, err)
		}
	}
	if _, err := call[rpc.AttrResp](m, rpc.MLookup, &rpc.EntryReq{Parent: rpc.RootIno, Name: "owned-by-root"}); errnoOf(err) != syscall.ENOENT {
		t.Errorf("a refused create made a file: %v", err)
	}
	if err := raw.Call(context.Background(), m.Addr(), rpc.MCluster, &rpc.Empty{}, &rpc.ClusterResp{}); err != nil {
		t.Errorf("health check without a credential: %v", err)
	}
}

// TestMungeSessions: a user's process proves its uid with a real munged;
// the session token works until it expires; a replayed MUNGE credential
// and an expired token are refused.
func TestMungeSessions(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MungeSocket = mungetest.Start(t)
	cfg.SessionTTL = time.Second
	m := startMDS(t, cfg)
	ctx := context.Background()
	munge := identity.Munge{Socket: cfg.MungeSocket}
	cred, err := munge.Encode(ctx, identity.SessionPayload)
	if err != nil {
		t.Fatal(err)
	}
	raw := rpc.NewClient(rpc.ClientConfig{})
	defer raw.Close()
	mungeHdr := identity.FormatHeader(identity.SchemeMunge, cred)
	var sess rpc.AuthSessionResp
	if err := raw.Call(rpc.WithAuthorization(ctx, mungeHdr), m.Addr(), rpc.MAuthSession, &rpc.Empty{}, &sess); err != nil {
		t.Fatalf("open a session: %v", err)
	}
	tok := rpc.WithAuthorization(ctx, identity.FormatHeader(identity.SchemeSession, sess.Token))
	if err := raw.Call(tok, m.Addr(), rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "d", Mode: 0o755}, &rpc.AttrResp{}); err != nil {
		t.Fatalf("mkdir with the session token: %v", err)
	}
	if err := raw.Call(rpc.WithAuthorization(ctx, mungeHdr), m.Addr(), rpc.MAuthSession, &rpc.Empty{}, &rpc.AuthSessionResp{}); errnoOf(err) != syscall.EACCES || !strings.Contains(err.Error(), "replayed") {
		t.Errorf("replayed MUNGE credential: %v, want EACCES (replayed)", err)
	}
	time.Sleep(time.Until(time.Unix(0, sess.Expiry)) + 10*time.Millisecond) // past the token's expiry
	err = raw.Call(tok, m.Addr(), rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "late", Mode: 0o755}, &rpc.AttrResp{})
	if errnoOf(err) != syscall.EACCES || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired session token: %v, want EACCES (expired)", err)
	}
}

// TestAdminOnlyForAdmins: voter changes, drains and scrubs from a user who
// is not an admin are refused and change nothing.
func TestAdminOnlyForAdmins(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(3)
	user := as(1234, 1234)
	for _, tc := range []struct {
		method string
		req    any
	}{
		{rpc.MAddVoter, &rpc.VoterReq{ID: "mds9", RaftAddr: "127.0.0.1:1"}},
		{rpc.MRemoveVoter, &rpc.VoterReq{ID: "mds1"}},
		{rpc.MDSDrain, &rpc.DrainReq{ID: "ds1"}},
		{rpc.MScrubStart, &rpc.Empty{}},
	} {
		if err := m.c.Call(user, m.Addr(), tc.method, tc.req, &rpc.Empty{}); errnoOf(err) != syscall.EACCES {
			t.Errorf("%s from uid 1234: %v, want EACCES", tc.method, err)
		}
	}
	c := must[rpc.ClusterResp](m, rpc.MCluster, &rpc.Empty{})
	if len(c.Voters) != 1 {
		t.Errorf("voters after refused changes: %+v", c.Voters)
	}
	l := must[rpc.DSListResp](m, rpc.MDSList, &rpc.Empty{})
	for _, d := range l.DataSvrs {
		if d.Draining {
			t.Errorf("%s draining after a refused drain", d.Info.ID)
		}
	}
}

// TestHeartbeatRoles: only a data server heartbeats, only for its own id,
// and a server on another node cannot take over a registered id.
func TestHeartbeatRoles(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.beat("ds1", "n1", "127.0.0.1:9001")
	hb := func(ctx context.Context, id, node, addr string) error {
		return m.c.Call(ctx, m.Addr(), rpc.MHeartbeat, &rpc.HeartbeatReq{ID: id, Node: node, Addr: addr, Capacity: 1 << 40, Free: 1 << 39}, &rpc.HeartbeatResp{})
	}
	dsCred := func(id, node string) context.Context {
		h, _ := identity.NewNodeCredentials(testSecret(), identity.RoleDS, node, id).Header(context.Background())
		return rpc.WithAuthorization(context.Background(), h)
	}
	for name, ctx := range map[string]context.Context{
		"no credential":       rpc.WithAuthorization(context.Background(), ""),
		"root on a node":      context.Background(),
		"a user":              as(1000, 1000),
		"another data server": dsCred("ds2", "n1"),
	} {
		if err := hb(ctx, "evil", "n1", "127.0.0.1:6666"); errnoOf(err) != syscall.EACCES {
			t.Errorf("heartbeat of a new server from %s: %v, want EACCES", name, err)
		}
		if err := hb(ctx, "ds1", "n1", "127.0.0.1:6666"); errnoOf(err) != syscall.EACCES {
			t.Errorf("heartbeat for ds1 from %s: %v, want EACCES", name, err)
		}
	}
	if err := hb(dsCred("ds1", "n9"), "ds1", "n9", "127.0.0.1:6666"); errnoOf(err) != syscall.EEXIST {
		t.Errorf("ds1 taken over from another node: %v, want EEXIST", err)
	}
	c := must[rpc.ClusterResp](m, rpc.MCluster, &rpc.Empty{})
	if len(c.DataSvrs) != 1 || c.DataSvrs[0].ID != "ds1" || c.DataSvrs[0].Addr != "127.0.0.1:9001" || c.DataSvrs[0].Node != "n1" {
		t.Errorf("registry after refused heartbeats: %+v", c.DataSvrs)
	}
}

// TestLayoutGetPermission: no layout or capability for a file the caller
// may not open for what it asks; the owner's is bound to the owner.
func TestLayoutGetPermission(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	f := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "private", Mode: 0o600, Cred: rpc.Cred{Uid: 1000, Gid: 1000}}).Attr
	g := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "group-read", Mode: 0o640, Cred: rpc.Cred{Uid: 1000, Gid: 4242}}).Attr
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		ino   uint64
		write bool
		want  syscall.Errno
	}{
		{"other reads 0600", as(2000, 2000), f.Ino, false, syscall.EACCES},
		{"other writes 0600", as(2000, 2000), f.Ino, true, syscall.EACCES},
		{"owner reads 0600", as(1000, 1000), f.Ino, false, 0},
		{"owner writes 0600", as(1000, 1000), f.Ino, true, 0},
		{"group member reads 0640", as(2000, 4242), g.Ino, false, 0},
		{"group member writes 0640", as(2000, 4242), g.Ino, true, syscall.EACCES},
		{"root writes 0600", as(0, 0), f.Ino, true, 0},
	} {
		r, err := callCtx[rpc.LayoutGetResp](m, tc.ctx, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: tc.ino, Write: tc.write})
		if errnoOf(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		if err == nil && r.Cap.Client != "n:testnode" {
			t.Errorf("%s: capability bound to %q, want the caller n:testnode", tc.name, r.Cap.Client)
		}
	}
}
