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
	puts := []rpc.TierPutReq{
		// Another node's report may come before the first node's info.
		{Job: 7, Errors: []string{"e0"}},
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
		Errors: []string{"e0", "e1"},
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
	// Job 3 was requeued: its first run is kept inside its record.
	d.must(cmdTierPut, &tierPutCmd{Req: rpc.TierPutReq{Job: 3, Run: 1, Info: &rpc.TierInfo{Nodes: []string{"a"}}, JobState: "COMPLETED"}, Now: 5})
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
	if r := g.st.tiers[3]; r.Run != 1 || r.JobState != "COMPLETED" || len(r.Runs) != 1 || r.Runs[0].State != rpc.TierRunning || r.Runs[0].Lost[0] != "x" {
		t.Fatalf("restored requeued tier %+v", r)
	}
	snap2, _ := g.Snapshot()
	if b2 := persist(t, snap2); !bytes.Equal(b1, b2) {
		t.Fatal("snapshot of the restored state differs")
	}
}

// TestTierRuns: a requeued job's runs are kept apart (the first run's
// counts and end stay, a late report of the first run lands in it), a
// node's failure turns done into failed, and a job Slurm says was
// cancelled is recorded cancelled.
func TestTierRuns(t *testing.T) {
	d := &fsmDriver{t: t, f: newFSM()}
	info := func(created int64) *rpc.TierInfo { return &rpc.TierInfo{Nodes: []string{"n1", "n2"}, Created: created} }
	put := func(now int64, r rpc.TierPutReq) {
		r.Job = 7
		d.must(cmdTierPut, &tierPutCmd{Req: r, Now: now})
	}
	put(1, rpc.TierPutReq{Info: info(10), State: rpc.TierRunning})
	put(2, rpc.TierPutReq{Stats: rpc.TierNodeStats{Node: "n1", DrainedFiles: 1, DrainedBytes: 5}})
	put(3, rpc.TierPutReq{State: rpc.TierDone, Ended: 20})
	// Run 1 starts; a node's report of it comes before the first node's.
	put(4, rpc.TierPutReq{Run: 1, Stats: rpc.TierNodeStats{Node: "n2", StagedFiles: 1}})
	put(5, rpc.TierPutReq{Run: 1, Info: info(30), State: rpc.TierRunning})
	put(6, rpc.TierPutReq{JobState: "REQUEUED"}) // run 0's end, late
	put(7, rpc.TierPutReq{Run: 1, State: rpc.TierFailed, Errors: []string{"n2 failed"}})
	put(8, rpc.TierPutReq{Run: 1, State: rpc.TierDone, Ended: 40})
	rec := d.f.st.tiers[7]
	if rec.Run != 1 || rec.State != rpc.TierFailed || rec.Info.Created != 30 || rec.Ended != 40 || len(rec.Stats) != 1 || rec.Stats[0].Node != "n2" {
		t.Fatalf("run 1: %+v", rec)
	}
	if len(rec.Runs) != 1 {
		t.Fatalf("earlier runs: %+v", rec.Runs)
	}
	r0 := rec.Runs[0]
	if r0.Run != 0 || r0.State != rpc.TierDone || r0.JobState != "REQUEUED" || r0.Info.Created != 10 || r0.Ended != 20 ||
		len(r0.Stats) != 1 || r0.Stats[0].DrainedFiles != 1 || r0.Runs != nil {
		t.Fatalf("run 0: %+v", r0)
	}
	// Run 2 is cancelled: done, then Slurm's word.
	put(9, rpc.TierPutReq{Run: 2, Info: info(50), State: rpc.TierRunning})
	put(10, rpc.TierPutReq{Run: 2, State: rpc.TierDone, Ended: 60})
	put(11, rpc.TierPutReq{Run: 2, JobState: "CANCELLED"})
	rec = d.f.st.tiers[7]
	if rec.State != rpc.TierCancelled || rec.JobState != "CANCELLED" || len(rec.Runs) != 2 || rec.Runs[1].State != rpc.TierFailed {
		t.Fatalf("run 2: %+v", rec)
	}
	// Past MaxTierRuns the first run is kept and the next ones dropped:
	// runs 0 to MaxTierRuns+2 are earlier runs, 3 too many, so 1, 2, 3 go.
	for r := uint32(3); r <= rpc.MaxTierRuns+3; r++ {
		put(int64(20+r), rpc.TierPutReq{Run: r, Info: info(int64(100 + r))})
	}
	rec = d.f.st.tiers[7]
	if len(rec.Runs) != rpc.MaxTierRuns || rec.Runs[0].Run != 0 || rec.Runs[1].Run != 4 {
		t.Fatalf("%d earlier runs, first %d, second %d", len(rec.Runs), rec.Runs[0].Run, rec.Runs[1].Run)
	}
}
