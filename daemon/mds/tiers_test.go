package mds

import (
	"bytes"
	"io"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

func agentCap(secret []byte) capability.Token {
	t := capability.Token{Ops: capability.OpAdmin, Job: "tier", Expiry: time.Now().Add(time.Minute).UnixNano()}
	t.Sign(secret)
	return t
}

// TestTierRegistry writes a tier's record as the agents of three nodes
// would, and reads it back: info, merged per-node counters, errors, lost
// files without duplicates, a final state that a late update cannot undo.
func TestTierRegistry(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	cp := agentCap(testSecret())
	info := &rpc.TierInfo{UID: 1000, GID: 100, Nodes: []string{"n1", "n2", "n3"}, Capacity: 1 << 30, Spec: "capacity=1G", MountPath: "/mnt/t/7", Created: 5}

	// Without the cluster secret nobody writes the registry.
	bad := agentCap(bytes.Repeat([]byte{9}, capability.SecretSize))
	if _, err := call[rpc.Empty](m, rpc.MTierPut, &rpc.TierPutReq{Cap: bad, Job: 7, Info: info}); errnoOf(err) != syscall.EACCES {
		t.Fatalf("put with a forged capability: %v, want EACCES", err)
	}
	if _, err := call[rpc.Empty](m, rpc.MTierPut, &rpc.TierPutReq{Cap: cp, Job: 7, State: rpc.TierRunning}); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("update before the first put: %v, want ENOENT", err)
	}
	puts := []rpc.TierPutReq{
		{Job: 7, Info: info, State: rpc.TierAssembling},
		{Job: 7, State: rpc.TierStaging, Stats: rpc.TierNodeStats{Node: "n2", StagedBytes: 10, StagedFiles: 1}},
		{Job: 7, Stats: rpc.TierNodeStats{Node: "n1", StagedBytes: 20, StagedFiles: 2}},
		{Job: 7, State: rpc.TierRunning, Stats: rpc.TierNodeStats{Node: "n2", StagedBytes: 30, StagedFiles: 3}, Errors: []string{"e1"}},
		{Job: 7, Lost: []string{"ckpt/a", "ckpt/b"}},
		{Job: 7, State: rpc.TierDone, Ended: 99, Lost: []string{"ckpt/a"}},
		{Job: 7, State: rpc.TierRunning}, // late: a final state stays
	}
	for _, p := range puts {
		p.Cap = cp
		must[rpc.Empty](m, rpc.MTierPut, &p)
	}
	got := must[rpc.TierResp](m, rpc.MTierGet, &rpc.TierReq{Job: 7}).Tier
	want := rpc.TierRecord{
		Job: 7, Info: *info, State: rpc.TierDone, Ended: 99, Updated: got.Updated,
		Stats: []rpc.TierNodeStats{
			{Node: "n1", StagedBytes: 20, StagedFiles: 2},
			{Node: "n2", StagedBytes: 30, StagedFiles: 3},
		},
		Errors: []string{"e1"},
		Lost:   []string{"ckpt/a", "ckpt/b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("record\n got %+v\nwant %+v", got, want)
	}
	if _, err := call[rpc.TierResp](m, rpc.MTierGet, &rpc.TierReq{Job: 8}); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("get of an unknown job: %v, want ENOENT", err)
	}
	list := must[rpc.TierListResp](m, rpc.MTierList, &rpc.Empty{})
	if len(list.Tiers) != 1 || list.Tiers[0].Job != 7 {
		t.Fatalf("list: %+v", list.Tiers)
	}
}

// TestTierSnapshot checks that tier records survive a snapshot and restore
// byte for byte, and that a snapshot is not changed by later puts.
func TestTierSnapshot(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	for j := uint32(1); j <= 3; j++ {
		d.must(cmdTierPut, &tierPutCmd{Req: rpc.TierPutReq{Job: j, Info: &rpc.TierInfo{Nodes: []string{"a", "b"}}, State: rpc.TierRunning, Lost: []string{"x"}}, Now: int64(j)})
	}
	snap, _ := d.f.Snapshot()
	d.must(cmdTierPut, &tierPutCmd{Req: rpc.TierPutReq{Job: 2, State: rpc.TierDone, Errors: []string{"late"}}, Now: 10})
	b1 := persist(t, snap)
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(b1))); err != nil {
		t.Fatal(err)
	}
	if len(g.st.tiers) != 3 || g.st.tiers[2].State != rpc.TierRunning || len(g.st.tiers[2].Errors) != 0 {
		t.Fatalf("restored tiers %+v", g.st.tiers[2])
	}
	snap2, _ := g.Snapshot()
	if b2 := persist(t, snap2); !bytes.Equal(b1, b2) {
		t.Fatal("snapshot of the restored state differs")
	}
}
