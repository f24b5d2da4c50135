package mds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

func (m *tmds) getx(ino uint64, name string) (string, error) {
	r, err := call[rpc.XattrResp](m, rpc.MGetXattr, &rpc.XattrReq{Ino: ino, Name: name})
	if err != nil {
		return "", err
	}
	return string(r.Value), nil
}

func (m *tmds) setLayout(ino uint64, spec string) error {
	_, err := call[rpc.Empty](m, rpc.MSetXattr, &rpc.XattrReq{Ino: ino, Name: rpc.LayoutXattr, Value: []byte(spec)})
	return err
}

func (m *tmds) layoutOf(ino uint64, write bool) *rpc.LayoutGetResp {
	m.t.Helper()
	return must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Write: write})
}

func (m *tmds) mkdirP(parent uint64, name string) uint64 {
	m.t.Helper()
	return must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: parent, Name: name, Mode: 0o755}).Attr.Ino
}

func (m *tmds) createF(parent uint64, name, spec string) uint64 {
	m.t.Helper()
	return must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: parent, Name: name, Mode: 0o644, Layout: spec, Exclusive: true}).Attr.Ino
}

func TestLayoutInheritance(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(4)
	a := m.mkdirP(rpc.RootIno, "a")
	b := m.mkdirP(a, "b")
	if got, _ := m.getx(rpc.RootIno, rpc.LayoutXattr); got != "width=4,unit=1M,scheme=none" {
		t.Fatalf("root effective policy %q, want the default", got)
	}
	if err := m.setLayout(a, "width=2"); err != nil {
		t.Fatal(err)
	}
	if err := m.setLayout(b, "stripe_size=64K"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ino  uint64
		want string
	}{
		{a, "width=2,unit=1M,scheme=none"},
		{b, "width=2,unit=64K,scheme=none"},
	} {
		if got, err := m.getx(tc.ino, rpc.LayoutXattr); got != tc.want {
			t.Errorf("effective policy of %d = %q, %v, want %q", tc.ino, got, err, tc.want)
		}
	}
	c := m.mkdirP(b, "c")
	f := m.createF(c, "f", "")
	if l := m.layoutOf(f, false).Layout; l.Spec != "width=2,unit=64K,scheme=none" || len(l.Targets) != 2 || l.Generation != 1 {
		t.Fatalf("inherited layout %+v", l)
	}
	if got, _ := m.getx(f, rpc.LayoutXattr); got != "width=2,unit=64K,scheme=none" {
		t.Fatalf("file layout xattr %q", got)
	}
	// CreateReq.Layout overrides what it sets and inherits the rest.
	g := m.createF(c, "g", "width=3")
	if l := m.layoutOf(g, false).Layout; l.Spec != "width=3,unit=64K,scheme=none" {
		t.Fatalf("explicit create layout %+v", l)
	}
	// Listed for files always, for directories with their own policy only.
	for _, tc := range []struct {
		ino  uint64
		want bool
	}{{f, true}, {a, true}, {b, true}, {c, false}, {rpc.RootIno, false}} {
		names := must[rpc.ListXattrResp](m, rpc.MListXattr, &rpc.XattrReq{Ino: tc.ino}).Names
		if has := strings.Contains(strings.Join(names, ","), rpc.LayoutXattr); has != tc.want {
			t.Errorf("listxattr %d = %v, want layout listed %v", tc.ino, names, tc.want)
		}
	}
	// An empty value removes the policy: b now inherits a's unit.
	if err := m.setLayout(b, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.getx(b, rpc.LayoutXattr); got != "width=2,unit=1M,scheme=none" {
		t.Errorf("after removing b's policy: %q", got)
	}
	if _, err := call[rpc.Empty](m, rpc.MRemoveXattr, &rpc.XattrReq{Ino: a, Name: rpc.LayoutXattr}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.getx(b, rpc.LayoutXattr); got != "width=4,unit=1M,scheme=none" {
		t.Errorf("after removing a's policy: %q", got)
	}
	// A moved directory inherits from its new parent.
	if err := m.setLayout(a, "width=1"); err != nil {
		t.Fatal(err)
	}
	d := m.mkdirP(rpc.RootIno, "d")
	must[rpc.Empty](m, rpc.MRename, &rpc.RenameReq{OldParent: rpc.RootIno, OldName: "d", NewParent: b, NewName: "d"})
	if got, _ := m.getx(d, rpc.LayoutXattr); got != "width=1,unit=1M,scheme=none" {
		t.Errorf("moved dir policy %q", got)
	}
}

func TestLayoutXattrRules(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(3)
	d := m.mkdirP(rpc.RootIno, "d")
	f := m.createF(d, "f", "")
	for _, tc := range []struct {
		ino   uint64
		spec  string
		errno syscall.Errno
		msg   string
	}{
		{d, "width=two", syscall.EINVAL, `item "width=two"`},
		{d, "colour=red", syscall.EINVAL, `unknown key "colour"`},
		{d, "unit=1000", syscall.EINVAL, "unit"},
		{d, "width=4", syscall.EINVAL, "width 4 needs 4 data servers on distinct nodes, 3 registered"},
		{d, "scheme=rs:4+2", syscall.EINVAL, "scheme rs:4+2 needs 6 data servers on distinct nodes, 3 registered"},
		{d, "scheme=rs:0+2", syscall.EINVAL, "K must be 1 to 16 data units"},
		{d, "scheme=rs:20+4", syscall.EINVAL, "K must be 1 to 16 data units"},
		{d, "scheme=mirror:1", syscall.EINVAL, "mirror needs 2 to 8 copies"},
		{d, "scheme=mirror:9", syscall.EINVAL, "mirror needs 2 to 8 copies"},
		{d, "scheme=mirror:4", syscall.EINVAL, "scheme mirror:4 needs 4 data servers on distinct nodes, 3 registered"},
		{d, "width=2,scheme=mirror:2", syscall.EINVAL, "width 2 with scheme mirror:2 needs 4 data servers on distinct nodes, 3 registered"},
		{d, "width=4,scheme=rs:2+1", syscall.EINVAL, "width 4 does not match scheme rs:2+1"},
		{f, "scheme=rs:4+2", syscall.ENOSPC, "layout scheme rs:4+2 needs 6 data servers on distinct nodes, only 3 are up"},
		{f, "width=2,scheme=mirror:2", syscall.ENOSPC, "layout width 2 with scheme mirror:2 needs 4 data servers on distinct nodes, only 3 are up"},
		{f, "width=4", syscall.ENOSPC, "layout width 4 needs 4 data servers on distinct nodes, only 3 are up"},
		{f, "", syscall.EINVAL, "cannot be empty"},
	} {
		before := m.dump()
		err := m.setLayout(tc.ino, tc.spec)
		if errnoOf(err) != tc.errno || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("set %q on %d: %v, want %v naming %q", tc.spec, tc.ino, err, tc.errno, tc.msg)
		}
		if after := m.dump(); after != before {
			t.Errorf("set %q on %d failed but changed the namespace", tc.spec, tc.ino)
		}
	}

	// An empty file is re-placed with a new generation; the old one is orphaned.
	old := m.layoutOf(f, true)
	if err := m.setLayout(f, "width=2,unit=4M"); err != nil {
		t.Fatal(err)
	}
	nl := m.layoutOf(f, true)
	if nl.Layout.Spec != "width=2,unit=4M,scheme=none" || nl.Layout.Generation != old.Layout.Generation+1 || nl.Attr.Gen != nl.Layout.Generation {
		t.Fatalf("relayout: %+v, was %+v", nl.Layout, old.Layout)
	}
	m.fsm.mu.RLock()
	_, orphaned := m.fsm.st.orphans[orphanKey{Ino: f, Gen: old.Layout.Generation}]
	m.fsm.mu.RUnlock()
	if !orphaned {
		t.Errorf("old generation %d of inode %d is not queued for collection", old.Layout.Generation, f)
	}
	// Once it has data it keeps its layout.
	must[rpc.AttrResp](m, rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: f, Gen: nl.Layout.Generation, End: 4096, Mtime: 5})
	err := m.setLayout(f, "width=1")
	if errnoOf(err) != syscall.EEXIST || !strings.Contains(err.Error(), "cannot change the layout of a file that has data (size 4096)") {
		t.Fatalf("relayout of a file with data: %v", err)
	}
	if _, err := call[rpc.Empty](m, rpc.MRemoveXattr, &rpc.XattrReq{Ino: f, Name: rpc.LayoutXattr}); errnoOf(err) != syscall.EPERM {
		t.Errorf("remove a file's layout: %v, want EPERM", err)
	}
}

func TestPlacement(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	if _, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x"}); errnoOf(err) != syscall.ENOSPC || !strings.Contains(err.Error(), "no data servers are up") {
		t.Fatalf("create with no data server: %v", err)
	}
	// Two data servers: the default width 4 shrinks to 2, an explicit 3 fails.
	m.beat("a1", "nodeA", "10.0.0.1:1")
	m.beat("b1", "nodeB", "10.0.0.2:1")
	f := m.createF(rpc.RootIno, "narrow", "")
	if l := m.layoutOf(f, false).Layout; len(l.Targets) != 2 || l.Spec != "width=2,unit=1M,scheme=none" {
		t.Fatalf("default width with 2 data servers: %+v", l)
	}
	if _, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "wide", Layout: "width=3"}); errnoOf(err) != syscall.ENOSPC || !strings.Contains(err.Error(), "width 3 needs 3") || !strings.Contains(err.Error(), "only 2 are up") {
		t.Fatalf("explicit width 3 with 2 data servers: %v", err)
	}
	// Eight servers on six nodes (a2 shares nodeA, b2 nodeB): every file's
	// columns are on distinct servers and distinct nodes; all are used.
	// They beat again before every create: on a loaded machine the 60
	// creates may take longer than the heartbeat timeout, and a server
	// that missed it is down (TestPlacement failed so, "no data servers
	// are up", under load).
	beatAll := func() {
		m.beat("a1", "nodeA", "10.0.0.1:1")
		m.beat("b1", "nodeB", "10.0.0.2:1")
		m.beat("a2", "nodeA", "10.0.0.1:2")
		m.beat("b2", "nodeB", "10.0.0.2:2")
		for _, n := range []string{"c", "d", "e", "f"} {
			m.beat(n+"1", "node"+strings.ToUpper(n), "10.0.0.9:"+n)
		}
	}
	node := map[string]string{"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C", "d1": "D", "e1": "E", "f1": "F"}
	used := map[string]int{}
	for i := 0; i < 60; i++ {
		beatAll()
		ino := m.createF(rpc.RootIno, fmt.Sprintf("f%d", i), "width=4")
		l := m.layoutOf(ino, false).Layout
		nodes := map[string]bool{}
		for _, id := range l.Targets {
			if nodes[node[id]] {
				t.Fatalf("file %d has two columns on node %s: %v", i, node[id], l.Targets)
			}
			nodes[node[id]] = true
			used[id]++
		}
	}
	if len(used) != 8 {
		t.Errorf("placement used %d of 8 data servers: %v", len(used), used)
	}
	beatAll()
	if _, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "w7", Layout: "width=7"}); errnoOf(err) != syscall.ENOSPC || !strings.Contains(err.Error(), "only 6 are up") {
		t.Errorf("width 7 over 6 nodes: %v, want ENOSPC", err)
	}
}

func TestLayoutGetCapability(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.beat("ds1", "n1", "127.0.0.1:9001")
	m.beat("ds2", "n2", "127.0.0.1:9002")
	f := m.createF(rpc.RootIno, "f", "width=2")
	g := m.createF(rpc.RootIno, "g", "width=1")
	now := time.Now()
	r := m.layoutOf(f, false)
	if r.Attr.Ino != f || len(r.Layout.Addrs) != 2 {
		t.Fatalf("layoutget = %+v", r)
	}
	for i, id := range r.Layout.Targets {
		if want := "127.0.0.1:900" + id[2:]; r.Layout.Addrs[i] != want {
			t.Errorf("column %d on %s at %s, want %s", i, id, r.Layout.Addrs[i], want)
		}
	}
	secret, gen := testSecret(), r.Layout.Generation
	if err := r.Cap.Verify(secret, now, f, gen, capability.OpRead); err != nil {
		t.Errorf("read token does not verify for its file: %v", err)
	}
	if err := r.Cap.Verify(secret, now, f, gen, capability.OpWrite); !errors.Is(err, capability.ErrDenied) {
		t.Errorf("read token allows writing: %v", err)
	}
	if err := r.Cap.Verify(secret, now, g, gen, capability.OpRead); !errors.Is(err, capability.ErrScope) {
		t.Errorf("token of inode %d verifies for inode %d: %v", f, g, err)
	}
	if err := r.Cap.Verify(secret, now.Add(11*time.Minute), f, gen, capability.OpRead); !errors.Is(err, capability.ErrExpired) {
		t.Errorf("token valid after its TTL: %v", err)
	}
	if err := r.Cap.Verify(make([]byte, capability.SecretSize), now, f, gen, capability.OpRead); !errors.Is(err, capability.ErrForged) {
		t.Errorf("token verifies under another secret: %v", err)
	}
	w := m.layoutOf(f, true)
	if err := w.Cap.Verify(secret, now, f, gen, capability.OpRead|capability.OpWrite); err != nil {
		t.Errorf("write token: %v", err)
	}
	// A data server that comes back on a new address is found there.
	m.beat("ds1", "n1", "127.0.0.1:9101")
	r = m.layoutOf(f, false)
	for i, id := range r.Layout.Targets {
		if id == "ds1" && r.Layout.Addrs[i] != "127.0.0.1:9101" {
			t.Errorf("ds1 moved but layout says %s", r.Layout.Addrs[i])
		}
	}
}

func TestLayoutCommit(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	f := m.createF(rpc.RootIno, "f", "")
	commit := func(gen, end uint64, mtime int64) rpc.Attr {
		t.Helper()
		return must[rpc.AttrResp](m, rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: f, Gen: gen, End: end, Mtime: mtime}).Attr
	}
	if a := commit(1, 1000, 50); a.Size != 1000 || a.Mtime != 50 {
		t.Fatalf("commit 1000: %+v", a)
	}
	if a := commit(1, 400, 60); a.Size != 1000 || a.Mtime != 60 {
		t.Fatalf("commit below the size: %+v, want size 1000 mtime 60", a)
	}
	if a := commit(7, 5000, 70); a.Size != 1000 || a.Mtime != 60 {
		t.Fatalf("stale generation changed the file: %+v", a)
	}
	if a := must[rpc.AttrResp](m, rpc.MGetattr, &rpc.InoReq{Ino: f}).Attr; a.Size != 1000 {
		t.Fatalf("getattr after commits: %+v", a)
	}
	must[rpc.Empty](m, rpc.MLayoutReturn, &rpc.InoReq{Ino: f})
}

func TestHeartbeatTimeout(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	cfg := testConfig(t.TempDir())
	s, err := New(cfg, Deps{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := &tmds{Server: s, t: t, c: testClient(0)}
	t.Cleanup(func() { m.c.Close(); s.Close() })
	<-s.Ready()
	hb := must[rpc.HeartbeatResp](m, rpc.MHeartbeat, &rpc.HeartbeatReq{ID: "ds1", Addr: "127.0.0.1:1", Capacity: 100, Free: 40})
	if hb.IntervalMs != 100 {
		t.Errorf("interval %d ms, want 100", hb.IntervalMs)
	}
	must[rpc.HeartbeatResp](m, rpc.MHeartbeat, &rpc.HeartbeatReq{ID: "ds2", Addr: "127.0.0.1:2", Capacity: 100, Free: 60})
	fs := must[rpc.StatFSResp](m, rpc.MStatFS, &rpc.Empty{})
	if fs.Capacity != 200 || fs.Free != 100 || fs.DSUp != 2 || fs.DSTotal != 2 || fs.Files != 1 {
		t.Fatalf("statfs %+v", fs)
	}
	now.Add(int64(time.Second))
	must[rpc.HeartbeatResp](m, rpc.MHeartbeat, &rpc.HeartbeatReq{ID: "ds2", Addr: "127.0.0.1:2", Capacity: 100, Free: 50})
	now.Add(int64(1500 * time.Millisecond)) // ds1 silent 2.5s > 2s; ds2 1.5s
	fs = must[rpc.StatFSResp](m, rpc.MStatFS, &rpc.Empty{})
	if fs.Capacity != 100 || fs.Free != 50 || fs.DSUp != 1 || fs.DSTotal != 2 {
		t.Fatalf("statfs with ds1 down: %+v", fs)
	}
	cl, err := s.Cluster(context.Background())
	if err != nil || len(cl.DataSvrs) != 2 || cl.DataSvrs[0].State != "down" || cl.DataSvrs[1].State != "up" {
		t.Fatalf("cluster %+v, %v", cl, err)
	}
	f := m.createF(rpc.RootIno, "f", "")
	if l := m.layoutOf(f, false).Layout; len(l.Targets) != 1 || l.Targets[0] != "ds2" {
		t.Fatalf("placed on a down data server: %+v", l)
	}
	now.Add(int64(time.Hour))
	if _, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "g"}); errnoOf(err) != syscall.ENOSPC {
		t.Fatalf("create with every data server down: %v", err)
	}
}
