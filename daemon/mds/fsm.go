package mds

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// fsm is the metadata server's raft state machine. Its contract, as
// hashicorp/raft's fsm.go states it:
//
//   - Apply (and ApplyBatch) is called once an entry is committed, on every
//     replica, in log order, from raft's single FSM goroutine. It must be
//     deterministic: it reads nothing but the command and the current
//     state — no clock, no randomness, no soft state. The leader puts the
//     time and the placement into the command before raft.Apply. Apply
//     validates the command against the state (so two racing creates of
//     one name cannot both succeed) and returns a result whose err is the
//     refusal the caller reports; a refused command changes nothing.
//   - A command that does not decode panics: a replica that skipped an
//     entry it should have applied would diverge silently. A command of an
//     unknown type with the cmdIgnorable bit is skipped.
//   - Snapshot is called from the same goroutine as Apply, so no Apply runs
//     during it. It captures cheaply — shallow copies of the maps, the
//     inodes themselves are copy-on-write (state.w) — and the returned
//     FSMSnapshot's Persist does all the encoding and I/O, concurrently
//     with later Applies. Release drops the captured view.
//   - Restore replaces all state with a snapshot's; raft calls it with no
//     Apply running. Readers (handlers) are excluded by mu while the state
//     is swapped.
//
// Reads from handlers take mu.RLock; Apply takes mu.Lock once per batch
// and never blocks on anything else while holding it.
type fsm struct {
	mu sync.RWMutex
	st *state

	// names shares data server ids between decoded commands; only raft's
	// FSM goroutine (Apply, ApplyBatch) uses it.
	names targetNames

	// orphaned receives a token (never blocking) when Apply or Restore
	// leaves orphans to collect; the GC loop drains it.
	orphaned chan struct{}
}

var (
	_ raft.BatchingFSM = (*fsm)(nil)
	_ raft.FSMSnapshot = (*fsmSnapshot)(nil)
)

func newFSM() *fsm {
	return &fsm{st: newState(), orphaned: make(chan struct{}, 1), names: targetNames{}}
}

// Apply applies one committed log entry.
func (f *fsm) Apply(l *raft.Log) any {
	t, p := mustDecode(l, f.names)
	if p == nil {
		return nil // an ignorable command of a newer version
	}
	f.mu.Lock()
	n := len(f.st.orphans)
	r := f.st.applyAny(t, p)
	more := len(f.st.orphans) > n
	f.mu.Unlock()
	if more {
		f.kick()
	}
	return r
}

// decoded is a command decoded before the state lock is taken.
type decoded struct {
	t cmdType
	p any
}

// ApplyBatch applies committed entries in order under one lock; decoding
// happens before the lock is taken.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	cmds := make([]decoded, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			cmds[i].t, cmds[i].p = mustDecode(l, f.names)
		}
	}
	out := make([]any, len(logs))
	f.mu.Lock()
	n := len(f.st.orphans)
	for i, c := range cmds {
		if c.p != nil {
			out[i] = f.st.applyAny(c.t, c.p)
		}
	}
	more := len(f.st.orphans) > n
	f.mu.Unlock()
	if more {
		f.kick()
	}
	return out
}

func (f *fsm) kick() {
	select {
	case f.orphaned <- struct{}{}:
	default:
	}
}

// mustDecode decodes a command entry, or panics: see the FSM contract. A
// nil payload is an ignorable command of a newer version.
func mustDecode(l *raft.Log, names targetNames) (cmdType, any) {
	t, p, err := decodeCommandNames(l.Data, names)
	if err != nil {
		panic(fmt.Sprintf("mds: raft log entry %d does not decode, refusing to diverge: %v", l.Index, err))
	}
	return t, p
}

// applyAny applies a decoded command or batch and returns its result
// (a batchResult for a batch).
func (st *state) applyAny(t cmdType, p any) any {
	b, ok := p.(*batchCmd)
	if !ok {
		return st.apply(t, p)
	}
	out := make(batchResult, len(b.subs))
	for i, c := range b.subs {
		if c.p != nil {
			out[i] = st.apply(c.t, c.p)
		}
	}
	return out
}

// apply validates a decoded command (validation.go), checks it against
// the quotas and applies it, then settles the usage it changed (quota.go).
func (st *state) apply(t cmdType, p any) result {
	if err := validateCommand(p); err != nil {
		return fail(err)
	}
	if err := st.quotaCheck(p); err != nil {
		return fail(err)
	}
	r := st.dispatch(t, p)
	st.settleQuota()
	return r
}

// dispatch applies a command of type t.
func (st *state) dispatch(t cmdType, p any) result {
	switch t {
	case cmdQuotaSet:
		return st.applyQuotaSet(p.(*quotaSetCmd))
	case cmdQoSPolicy:
		return st.applyQoSPolicy(p.(*qosPolicyCmd))
	case cmdProject:
		return st.applyProject(p.(*projectCmd))
	case cmdInit:
		return st.applyInit(p.(*initCmd))
	case cmdCreate:
		return st.applyCreate(p.(*createCmd))
	case cmdMkdir:
		return st.applyMkdir(p.(*mkdirCmd))
	case cmdSymlink:
		return st.applySymlink(p.(*symlinkCmd))
	case cmdMknod:
		return st.applyMknod(p.(*mknodCmd))
	case cmdLink:
		return st.applyLink(p.(*linkCmd))
	case cmdUnlink:
		return st.applyUnlink(p.(*entryCmd))
	case cmdRmdir:
		return st.applyRmdir(p.(*entryCmd))
	case cmdRename:
		return st.applyRename(p.(*renameCmd))
	case cmdSetattr:
		return st.applySetattr(p.(*setattrCmd))
	case cmdSetXattr:
		return st.applySetXattr(p.(*xattrCmd))
	case cmdRemoveXattr:
		return st.applyRemoveXattr(p.(*xattrCmd))
	case cmdRelayout:
		return st.applyRelayout(p.(*relayoutCmd))
	case cmdCommit:
		return st.applyCommit(p.(*commitCmd))
	case cmdRegisterDS:
		return st.applyRegister(p.(*registerCmd))
	case cmdPurge:
		return st.applyPurge(p.(*purgeCmd))
	case cmdLockSet:
		return st.applyLockSet(p.(*lockCmd))
	case cmdLockRelease:
		return st.applyLockRelease(p.(*lockCmd))
	case cmdSessionDrop:
		return st.applySessionDrop(p.(*sessionCmd))
	case cmdMDSAddr:
		return st.applyMDSAddr(p.(*mdsAddrCmd))
	case cmdTierPut:
		return st.applyTierPut(p.(*tierPutCmd))
	case cmdInlineWrite:
		return st.applyInlineWrite(p.(*inlineWriteCmd))
	case cmdInlineSpill:
		return st.applyInlineSpill(p.(*inlineSpillCmd))
	}
	if r, ok := st.applyRepair(t, p); ok {
		return r
	}
	panic(fmt.Sprintf("mds: command type %d has a payload but no apply", t))
}

// Snapshot captures the state for Persist.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	v := f.st.capture()
	f.mu.Unlock()
	return &fsmSnapshot{view: v}, nil
}

// Restore replaces the state with the snapshot read from rc.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := readSnapshot(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	more := len(st.orphans) > 0
	f.mu.Unlock()
	if more {
		f.kick()
	}
	return nil
}

// fsmSnapshot is a captured view, written out by Persist.
type fsmSnapshot struct {
	view snapshotView
}

// Persist encodes the view to sink.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.view); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release drops the view.
func (s *fsmSnapshot) Release() { s.view = snapshotView{} }
