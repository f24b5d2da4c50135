package mds

import (
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestConcurrentCreates sends many creates at once, so that the proposer
// batches them: each caller must get its own command's result.
func TestConcurrentCreates(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(2)
	const n = 64
	var wg sync.WaitGroup
	won := make([]bool, n)
	mine := make([]uint64, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "same", Exclusive: true})
			switch errnoOf(err) {
			case 0:
				won[i] = true
			case syscall.EEXIST:
			default:
				errs[i] = err
				return
			}
			r, err := call[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: fmt.Sprintf("g%d", i), Exclusive: true})
			if err != nil {
				errs[i] = err
				return
			}
			mine[i] = r.Attr.Ino
		}()
	}
	wg.Wait()
	winners := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if won[i] {
			winners++
		}
		got := must[rpc.AttrResp](m, rpc.MLookup, &rpc.EntryReq{Parent: rpc.RootIno, Name: fmt.Sprintf("g%d", i)})
		if got.Attr.Ino != mine[i] {
			t.Errorf("client %d was told inode %d, but g%d is inode %d", i, mine[i], i, got.Attr.Ino)
		}
	}
	if winners != 1 {
		t.Fatalf("%d exclusive creates of one name succeeded, want 1", winners)
	}
}

func TestApplyBatch(t *testing.T) {
	f := newFSM()
	batch := encodeCommand(cmdBatch, &batchCmd{Cmds: [][]byte{
		encodeCommand(cmdMkdir, &mkdirCmd{Parent: rpc.RootIno, Name: "d", Mode: 0o755, Now: 1}),
		encodeCommand(cmdMkdir, &mkdirCmd{Parent: rpc.RootIno, Name: "d", Mode: 0o755, Now: 2}), // EEXIST
		{byte(cmdIgnorable | 0x44)}, // skipped
		encodeCommand(cmdSymlink, &symlinkCmd{Parent: rpc.RootIno, Name: "s", Target: "d", Now: 3}),
	}})
	out := f.ApplyBatch([]*raft.Log{
		{Index: 1, Type: raft.LogCommand, Data: batch},
		{Index: 2, Type: raft.LogNoop},
		{Index: 3, Type: raft.LogCommand, Data: encodeCommand(cmdRmdir, &entryCmd{Parent: rpc.RootIno, Name: "d", Now: 4})},
	})
	rs, ok := out[0].(batchResult)
	if !ok || len(rs) != 4 {
		t.Fatalf("batch result %#v", out[0])
	}
	if rs[0].err != nil || !rs[0].created || errnoOf(rs[1].err) != syscall.EEXIST || rs[2] != (result{}) || rs[3].err != nil || rs[3].attr.Ino != rs[0].attr.Ino+1 {
		t.Fatalf("batch results %+v", rs)
	}
	if out[1] != nil {
		t.Errorf("no-op entry returned %v", out[1])
	}
	if r, _ := out[2].(result); r.err != nil {
		t.Errorf("rmdir after the batch: %v", r.err)
	}
	nested := encodeCommand(cmdBatch, &batchCmd{Cmds: [][]byte{batch}})
	if _, _, err := decodeCommand(nested); err == nil {
		t.Error("a nested batch decoded")
	}
}

// TestProposerSplitsAndHandsOff: several goroutines each apply more
// commands at once than one entry carries, so that their commands are cut
// over several entries, some proposed by other goroutines than the ones
// that queued them (the proposer hands an entry's future on to the
// goroutine of its first command). Every command must get its own
// result, whichever entry carried it and whoever waited for it.
func TestProposerSplitsAndHandsOff(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	const callers, per = 6, maxBatchCmds + maxBatchCmds/2
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmds := make([][]byte, per)
			for i := range cmds {
				name := fmt.Sprintf("c%d-%d", c, i)
				if i == per-1 {
					name = fmt.Sprintf("c%d-0", c) // a second mkdir of the first name
				}
				cmds[i] = encodeCommand(cmdMkdir, &mkdirCmd{Parent: rpc.RootIno, Name: name, Mode: 0o755, Now: 1})
			}
			res := make([]result, per)
			cerrs := make([]error, per)
			m.prop.applyMany(cmds, res, cerrs)
			for i := 0; i < per-1; i++ {
				if cerrs[i] != nil {
					errs[c] = fmt.Errorf("mkdir %d: %w", i, cerrs[i])
					return
				}
				m.fsm.mu.RLock()
				ino := m.fsm.st.inodes[rpc.RootIno].Entries[fmt.Sprintf("c%d-%d", c, i)]
				m.fsm.mu.RUnlock()
				if ino == 0 || ino != res[i].attr.Ino {
					errs[c] = fmt.Errorf("mkdir %d was told inode %d, the name is inode %d", i, res[i].attr.Ino, ino)
					return
				}
			}
			if errnoOf(cerrs[per-1]) != syscall.EEXIST {
				errs[c] = fmt.Errorf("second mkdir of c%d-0: %v, want EEXIST", c, cerrs[per-1])
			}
		}()
	}
	wg.Wait()
	for c, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", c, err)
		}
	}
}
