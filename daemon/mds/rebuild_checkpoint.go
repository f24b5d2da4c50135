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
// got, the first time that long after the copy started: about the copying
// a change of leader throws away, at the cost of one fsync on the target
// and one raft entry. A copy that takes less is made durable once, when it
// is published.
const rebuildCheckpointEvery = time.Second

// checkpoint tracks the windows of one copy that are written and records
// the complete prefix now and then: the target's staged copy is committed
// (fsync) first, so a prefix on record is on disk. Windows finish out of
// order (rebuildInflight at once); only the prefix below the first window
// not yet written counts. One checkpoint is recorded at a time, by the
// window that found it due, while the others go on copying; the bytes of
// windows that finish meanwhile are counted as progress once it is
// recorded.
type checkpoint struct {
	s     *Server
	t     *task
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
	last     time.Time    // when the prefix was last recorded, or the copy started
	busy     bool         // a window is recording a checkpoint
	pending  uint64       // bytes written while it does, not yet counted as progress
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

// done notes that window i, of n bytes, is written, records the prefix if
// it is time, and counts the bytes as the task's progress: a task's
// progress (rebuild status) never shows bytes a checkpoint due before them
// has not recorded. A commit that fails on the target fails the window
// (the copy's writes would fail too); a record the FSM refuses or raft
// cannot take is logged, not returned: the copy goes on, and a later
// attempt copies a little more.
func (ck *checkpoint) done(ctx context.Context, i int, n uint64) error {
	s := ck.s
	ck.mu.Lock()
	if ck.finished == nil {
		ck.finished = map[int]bool{}
	}
	ck.finished[i] = true
	for ck.finished[ck.next] {
		delete(ck.finished, ck.next)
		ck.next++
	}
	now := s.clock()
	next := ck.next
	prefix := uint64(next) * rebuildWindow
	switch {
	case ck.busy:
		ck.pending += n
		ck.mu.Unlock()
		return nil
	case next <= ck.recorded || prefix >= ck.end || now.Sub(ck.last) < rebuildCheckpointEvery ||
		!s.wr.clean(ck.wt) || !s.leads(ck.term):
		// A write grant during the copy makes the bytes on the target
		// suspect: nothing more is recorded, and the swap redoes the copy.
		ck.mu.Unlock()
		s.rb.progress(ck.t, n)
		return nil
	}
	ck.busy, ck.last = true, now
	ck.mu.Unlock()
	recorded, err := ck.record(ctx, prefix)
	ck.mu.Lock()
	ck.busy = false
	if recorded {
		ck.recorded = max(ck.recorded, next)
	}
	n += ck.pending
	ck.pending = 0
	ck.mu.Unlock()
	if err != nil {
		return err
	}
	s.rb.progress(ck.t, n)
	return nil
}

// record commits the staged copy on the target and records prefix bytes
// of it as copied in raft; it reports whether the record was taken.
func (ck *checkpoint) record(ctx context.Context, prefix uint64) (bool, error) {
	s := ck.s
	if _, err := s.stageCall(ctx, ck.fs, ck.to, ck.comp, ck.class, rpc.DStageCommit, rpc.RebuildReq{}); err != nil {
		return false, err
	}
	cmd := &rebuildProgressCmd{Ino: ck.fs.ino, Gen: ck.fs.l.Generation, Comp: uint32(ck.comp), To: ck.to, Term: ck.term, Done: prefix}
	if _, err := s.apply(cmdRebuildProgress, cmd); err != nil {
		if !errors.Is(err, syscall.ESTALE) {
			s.log.Warn("rebuild_progress_not_recorded", "inode", ck.fs.ino, "comp", ck.comp, "err", err)
		}
		return false, nil
	}
	return true, nil
}
