package mds

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// layouts returns the layout of every regular file reachable from the root,
// with the capability dropped.
func (m *tmds) layouts() map[uint64]rpc.Layout {
	m.t.Helper()
	out := map[uint64]rpc.Layout{}
	var walk func(ino uint64)
	walk = func(ino uint64) {
		for _, e := range must[rpc.ReaddirResp](m, rpc.MReaddir, &rpc.ReaddirReq{Ino: ino}).Entries {
			switch {
			case e.Attr.IsDir():
				walk(e.Attr.Ino)
			case e.Attr.IsFile():
				out[e.Attr.Ino] = m.layoutOf(e.Attr.Ino, false).Layout
			}
		}
	}
	walk(rpc.RootIno)
	return out
}

// TestRestart closes the server and starts a new one on the same Dir, with
// and without a snapshot in between: every acknowledged name, attribute,
// xattr, layout and registered data server is still there.
func TestRestart(t *testing.T) {
	for _, snapshot := range []bool{false, true} {
		name := "log only"
		if snapshot {
			name = "after a snapshot"
		}
		t.Run(name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			cfg := testConfig(t.TempDir())
			m := startMDS(t, cfg)
			m.fakeDSes(4)
			policyDir := m.mkdirP(rpc.RootIno, "striped")
			if err := m.setLayout(policyDir, "width=2,unit=64K"); err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, m: m, o: newModel(), r: rand.New(rand.NewPCG(seed, 7))}
			h.o.mkdir(h.o.root, "striped", 0o755)
			h.o.root.kids["striped"].ino = policyDir
			for i := 0; i < 120; i++ {
				h.step(i)
				if i == 60 && snapshot {
					if err := m.node.raft.Snapshot().Error(); err != nil {
						t.Fatalf("snapshot: %v", err)
					}
				}
			}
			h.compare()
			wantDump, wantLayouts := m.dump(), m.layouts()
			wantPolicy, _ := m.getx(policyDir, rpc.LayoutXattr)
			before, _ := m.Cluster(context.Background())
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}

			m2 := startMDS(t, cfg)
			h.m = m2
			h.compare()
			if got := m2.dump(); got != wantDump {
				t.Fatalf("namespace after restart differs:\nbefore:\n%s\nafter:\n%s", wantDump, got)
			}
			if got := m2.layouts(); !reflect.DeepEqual(got, wantLayouts) {
				t.Fatalf("layouts after restart differ:\nbefore: %v\nafter:  %v", wantLayouts, got)
			}
			if got, _ := m2.getx(policyDir, rpc.LayoutXattr); got != wantPolicy {
				t.Fatalf("policy after restart %q, want %q", got, wantPolicy)
			}
			after, err := m2.Cluster(context.Background())
			if err != nil || len(after.DataSvrs) != 4 || after.Inodes != before.Inodes || after.Term < before.Term {
				t.Fatalf("cluster after restart %+v, %v; before %+v", after, err, before)
			}
			// It keeps working, and inode numbers are not reused.
			m2.fakeDSes(4)
			f := m2.createF(rpc.RootIno, "new-after-restart", "")
			for ino := range wantLayouts {
				if ino >= f {
					t.Fatalf("new inode %d is not above old inode %d", f, ino)
				}
			}
		})
	}
}

// TestRestartSnapshotThreshold lets raft take snapshots by itself (a low
// threshold) and restarts from them.
func TestRestartSnapshotThreshold(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SnapshotThreshold = 16
	m := startMDS(t, cfg)
	m.fakeDSes(2)
	d := m.mkdirP(rpc.RootIno, "d")
	for i := 0; i < 80; i++ {
		m.createF(d, "f"+string(rune('A'+i%26))+string(rune('a'+i/26)), "")
	}
	if err := m.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	want := m.dump()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := startMDS(t, cfg)
	if got := m2.dump(); got != want {
		t.Fatalf("namespace after restart differs:\nbefore:\n%s\nafter:\n%s", want, got)
	}
}
