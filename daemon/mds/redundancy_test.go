package mds

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestPlacementRedundant: mirror:N and rs:K+M layouts get all their
// components on distinct nodes; an unset width shrinks to what the up
// nodes can hold N copies of; rs takes its width from K.
func TestPlacementRedundant(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	// Eight servers on six nodes: a2 shares nodeA, b2 nodeB.
	node := map[string]string{}
	for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
		id := n + "1"
		node[id] = "node" + n
		m.beat(id, node[id], fmt.Sprintf("10.0.0.%d:1", i+1))
	}
	m.beat("a2", "nodea", "10.0.0.1:2")
	m.beat("b2", "nodeb", "10.0.0.2:2")
	node["a2"], node["b2"] = "nodea", "nodeb"

	for _, tc := range []struct {
		spec, want string
		targets    int
	}{
		{"scheme=rs:4+2", "width=4,unit=1M,scheme=rs:4+2", 6},
		{"scheme=rs:2+1,unit=64K", "width=2,unit=64K,scheme=rs:2+1", 3},
		{"scheme=mirror:2", "width=3,unit=1M,scheme=mirror:2", 6}, // default width 4 shrinks to 6/2
		{"width=2,scheme=mirror:3", "width=2,unit=1M,scheme=mirror:3", 6},
		{"scheme=mirror:6", "width=1,unit=1M,scheme=mirror:6", 6},
	} {
		for i := 0; i < 20; i++ {
			ino := m.createF(rpc.RootIno, fmt.Sprintf("%s-%d", tc.spec, i), tc.spec)
			l := m.layoutOf(ino, false).Layout
			if l.Spec != tc.want || len(l.Targets) != tc.targets || len(l.Addrs) != tc.targets {
				t.Fatalf("create %q: layout %s on %v, want %s on %d servers", tc.spec, l.Spec, l.Targets, tc.want, tc.targets)
			}
			nodes := map[string]bool{}
			for _, id := range l.Targets {
				if nodes[node[id]] {
					t.Fatalf("create %q: two components on node %s: %v", tc.spec, node[id], l.Targets)
				}
				nodes[node[id]] = true
			}
		}
	}
	for _, tc := range []struct {
		spec  string
		errno syscall.Errno
		msg   string
	}{
		{"scheme=rs:4+3", syscall.ENOSPC, "layout scheme rs:4+3 needs 7 data servers on distinct nodes, only 6 are up"},
		{"width=4,scheme=mirror:2", syscall.ENOSPC, "layout width 4 with scheme mirror:2 needs 8 data servers on distinct nodes, only 6 are up"},
		{"scheme=mirror:7", syscall.ENOSPC, "layout width 1 with scheme mirror:7 needs 7 data servers on distinct nodes, only 6 are up"},
		{"width=2,scheme=rs:4+2", syscall.EINVAL, "width 2 does not match scheme rs:4+2"},
	} {
		_, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "x", Layout: tc.spec})
		if errnoOf(err) != tc.errno || !strings.Contains(fmt.Sprint(err), tc.msg) {
			t.Errorf("create %q: %v, want %v naming %q", tc.spec, err, tc.errno, tc.msg)
		}
	}
	// A directory's rs scheme decides the width of what is created in it.
	d := m.mkdirP(rpc.RootIno, "ckpt")
	if err := m.setLayout(d, "scheme=rs:4+2"); err != nil {
		t.Fatal(err)
	}
	if err := m.setLayout(d, "scheme=rs:4+3"); errnoOf(err) != syscall.EINVAL || !strings.Contains(err.Error(), "scheme rs:4+3 needs 7 data servers on distinct nodes, 6 registered") {
		t.Fatalf("rs:4+3 on 6 nodes: %v", err)
	}
	f := m.createF(d, "f", "unit=256K")
	if l := m.layoutOf(f, false).Layout; l.Spec != "width=4,unit=256K,scheme=rs:4+2" {
		t.Fatalf("file in an rs:4+2 directory: %s", l.Spec)
	}
	if _, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: d, Name: "g", Layout: "width=3"}); errnoOf(err) != syscall.EINVAL || !strings.Contains(err.Error(), "width 3 does not match scheme rs:4+2") {
		t.Fatalf("width 3 under rs:4+2: %v", err)
	}
}
