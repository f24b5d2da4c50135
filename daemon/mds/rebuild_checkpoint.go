package mds

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// rebuildCheckpointEvery is how often a rebuild records how far its copy
// got (the first window at once): about the copying a change of leader
// throws away, at the cost of one fsync on the target and one raft entry.
const rebuildCheckpointEvery = time.Second

// checkpoint tracks the windows of one copy that are written and records
// the complete prefix now and then: the target's staged copy is committed
// (fsync) first, so a prefix on record is on disk. Windows finish out of
// order (rebuildInflight at once); only the prefix below the first window
// not yet written counts.
type checkpoint struct {
	s     *Server
	term  uint64
	wt    *watch
	fs    fileSnap
	comp  int
	class uint8 // the QoS class of the calls
	to    string
	end   uint64 // the copy's end; a prefix reaching it is not recorded (the swap follows)

	order   sync.Mutex
	ordered *sync.Cond // broadcast when turns advances
	turns   int        // windows (counted from the first) past their turn

	mu       sync.Mutex
	next     int          // the first window not yet written
	finished map[int]bool // windows at or past next that are written
	recorded int          // the prefix on record, in windows
	last     time.Time    // when the prefix was last recorded
}

// turn runs fn as the j-th window's turn (j counts from the copy's first
// window): after every earlier window's turn has ended, before any later
// one's. A failed turn still ends: later windows fail on the cancelled context.
func (ck *checkpoint) turn(j int, fn func() error) error {
	ck.order.Lock()
	defer ck.order.Unlock()
	if ck.ordered == nil {
		ck.ordered = sync.NewCond(&ck.order)
	}
	for ck.turns != j {
		ck.ordered.Wait()
	}
	err := fn()
	ck.turns++
	ck.ordered.Broadcast()
	return err
}

// done notes that window i is written and records the prefix if it is
// time. A commit that fails on the target fails the window (the copy's
// writes would fail too); a record the FSM refuses or raft cannot take is
// logged, not returned: the copy goes on, and a later attempt copies a
// little more.
func (ck *checkpoint) done(ctx context.Context, i int) error {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if ck.finished == nil {
		ck.finished = map[int]bool{}
	}
	ck.finished[i] = true
	for ck.finished[ck.next] {
		delete(ck.finished, ck.next)
		ck.next++
	}
	s := ck.s
	now := s.clock()
	prefix := uint64(ck.next) * rebuildWindow
	if ck.next <= ck.recorded || prefix >= ck.end || now.Sub(ck.last) < rebuildCheckpointEvery {
		return nil
	}
	// A write grant during the copy makes the bytes on the target suspect:
	// nothing more is recorded, and the swap redoes the copy.
	if !s.wr.clean(ck.wt) || !s.leads(ck.term) {
		return nil
	}
	ck.last = now
	if _, err := s.stageCall(ctx, ck.fs, ck.to, ck.comp, ck.class, rpc.DStageCommit, rpc.RebuildReq{}); err != nil {
		return err
	}
	cmd := &rebuildProgressCmd{Ino: ck.fs.ino, Gen: ck.fs.l.Generation, Comp: uint32(ck.comp), To: ck.to, Term: ck.term, Done: prefix}
	if _, err := s.apply(cmdRebuildProgress, cmd); err != nil {
		if !errors.Is(err, syscall.ESTALE) {
			s.log.Warn("rebuild_progress_not_recorded", "inode", ck.fs.ino, "comp", ck.comp, "err", err)
		}
		return nil
	}
	ck.recorded = ck.next
	return nil
}
