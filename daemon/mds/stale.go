package mds

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/qos"
)

// LAYOUTERROR and stale components.
//
// A client whose call to one component of a mirror or rs file fails
// (unreachable data server, EIO) reports it with rpc.MLayoutError, as a
// pNFS flex-files client does. For a write, truncate or commit the MDS
// marks the component stale through raft (staleCmd, Strict) before it
// answers; only then may the client count the write as done, because from
// then on no new open reads the component: LAYOUTGET hands out the stale
// set (rpc.LayoutGetResp.Stale), readers read around it and writers skip
// it. If marking would leave the file unreadable (more than M stale
// components of an rs:K+M file, every copy of a mirror column) the mark is
// refused with EIO and the write fails. A read that found a corrupt block
// (EIO) marks nothing stale — the rest of the component is good, and the
// client reads around the block — but has the data server check the
// component (scrub.go), whose report gets the blocks repaired; a read that
// found a component shorter than its share of the file's size (ENODATA)
// has it checked and marked stale if it is (missing.go); an
// unreachable data server is the heartbeats' business (rebuild.go,
// RebuildDelay). A file without redundancy has nothing to mark: its
// failed writes fail.
//
// A reader that opened the file before the mark may still read the stale
// component: it sees the bytes from before the write it raced with, as
// close-to-open allows for an open that did not follow the writer's close.
//
// Writers. The rebuild manager must not swap in a component rebuilt from
// survivors while a client may write the file: the client would skip the
// stale component (or write the old one) and the rebuilt copy would miss
// its bytes. So the leader counts the layouts it grants for writing
// (LAYOUTGET with Write) until they are returned (LAYOUTRETURN with
// Write) or their capability expires, and a rebuild of a file that was
// granted for writing while it ran is thrown away and redone. A new
// leader does not know its predecessor's grants, only how long they can
// last: before a leader grants a write capability that expires at E, the
// FSM's write-grant horizon is at least E (grantHorizonCmd, raised to two
// capability lifetimes ahead, so about once per lifetime under writes).
// The horizon remembers the term that raised it, so that a new leader
// tells its predecessors' grants from its own: it treats every file as
// written until its predecessors' horizon; after a quiet period, or in a
// new cluster, it does not wait at all. (The
// horizon compares the clocks of different MDS nodes, as the capability
// expiry compares the MDS's and the data servers'.)

// writers is the leader's soft state of files granted for writing. It is
// safe for concurrent use.
type writers struct {
	clock func() time.Time

	mu           sync.Mutex
	swapped      *sync.Cond // broadcast when a swap ends
	files        map[uint64]*writerState
	unknownUntil time.Time // grants of an earlier leader may be live until then
}

// writerState is one file's outstanding write grants and the rebuilds
// watching it.
type writerState struct {
	open     int       // grants not yet returned
	until    time.Time // the latest grant's capability expiry
	swapping bool      // a rebuild is swapping a component: grants wait
	watches  map[*watch]struct{}
}

// watch is one rebuild's interest in a file: dirty is set by every write
// grant made while it is held.
type watch struct {
	ino   uint64
	dirty bool
}

func newWriters(clock func() time.Time) *writers {
	w := &writers{clock: clock, files: map[uint64]*writerState{}}
	w.swapped = sync.NewCond(&w.mu)
	return w
}

// takeOffice treats every file as written until horizon: grants of
// earlier leaders may be live until then. Grants this node recorded in an
// earlier term are kept: they expire on their own.
func (w *writers) takeOffice(horizon time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unknownUntil = horizon
}

func (w *writers) file(ino uint64) *writerState {
	f := w.files[ino]
	if f == nil {
		f = &writerState{}
		w.files[ino] = f
	}
	return f
}

// grant records a write grant of file ino expiring at expiry; open counts
// it as an open to be returned (a refresh of an open layout does not). It
// waits while a rebuild swaps one of the file's components, so that the
// caller reads the layout after the swap.
func (w *writers) grant(ino uint64, expiry time.Time, open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.files[ino] != nil && w.files[ino].swapping {
		w.swapped.Wait()
	}
	if !open && w.files[ino] == nil {
		// Nothing to extend and no watch to tell: a state made here would
		// never be pruned (no return follows).
		return
	}
	f := w.file(ino)
	if open {
		f.open++
	}
	if expiry.After(f.until) {
		f.until = expiry
	}
	for wt := range f.watches {
		wt.dirty = true
	}
}

// release records the return of a write grant of file ino.
func (w *writers) release(ino uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.files[ino]
	if f == nil {
		return
	}
	if f.open > 0 {
		f.open--
	}
	w.prune(ino, f)
}

// prune drops the state of a file nobody writes or watches; w.mu is held.
func (w *writers) prune(ino uint64, f *writerState) {
	if f.open == 0 && len(f.watches) == 0 && !f.swapping {
		delete(w.files, ino)
	}
}

// busyLocked says why file ino may have a writer now, or "".
func (w *writers) busyLocked(ino uint64, now time.Time) string {
	if now.Before(w.unknownUntil) {
		return fmt.Sprintf("a new leader waits until %s for the writers of its predecessor", w.unknownUntil.Format(time.TimeOnly))
	}
	if f := w.files[ino]; f != nil && f.open > 0 && now.Before(f.until) {
		return fmt.Sprintf("open for writing by %d client(s)", f.open)
	}
	return ""
}

// busy says why file ino may have a writer now, or "".
func (w *writers) busy(ino uint64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busyLocked(ino, w.clock())
}

// watch starts watching file ino for write grants.
func (w *writers) watch(ino uint64) *watch {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.file(ino)
	if f.watches == nil {
		f.watches = map[*watch]struct{}{}
	}
	wt := &watch{ino: ino}
	f.watches[wt] = struct{}{}
	return wt
}

// clean reports whether no write grant was made during watch wt.
func (w *writers) clean(wt *watch) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !wt.dirty
}

// unwatch ends a watch.
func (w *writers) unwatch(wt *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.files[wt.ino]; f != nil {
		delete(f.watches, wt)
		w.prune(wt.ino, f)
	}
}

// swap runs apply if no write grant was made during watch wt and the file
// has no writer now, holding back new write grants of the file until
// apply returns. It returns why it did not run apply, or apply's error.
func (w *writers) swap(wt *watch, apply func() error) (waiting string, err error) {
	w.mu.Lock()
	f := w.files[wt.ino]
	if why := w.busyLocked(wt.ino, w.clock()); why != "" {
		w.mu.Unlock()
		return why, nil
	}
	if wt.dirty {
		w.mu.Unlock()
		return "opened for writing while it was rebuilt", nil
	}
	f.swapping = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		f.swapping = false
		w.swapped.Broadcast()
		w.mu.Unlock()
	}()
	return "", apply()
}

// raiseHorizon makes the FSM's write-grant horizon at least exp.
func (s *Server) raiseHorizon(exp time.Time) error {
	s.fsm.mu.RLock()
	cur := s.fsm.st.rep.grantsUntil
	s.fsm.mu.RUnlock()
	if exp.UnixNano() <= cur {
		return nil
	}
	s.horizonMu.Lock()
	defer s.horizonMu.Unlock()
	s.fsm.mu.RLock()
	cur = s.fsm.st.rep.grantsUntil
	s.fsm.mu.RUnlock()
	if exp.UnixNano() <= cur {
		return nil // raised meanwhile
	}
	r := s.raft()
	if r == nil {
		return ErrClosed
	}
	_, err := s.apply(cmdGrantHorizon, &grantHorizonCmd{Until: s.clock().Add(2 * s.cfg.CapabilityTTL).UnixNano(), Term: r.CurrentTerm()})
	return err
}

// horizon returns how long the write capabilities granted by the leaders
// before term may last.
func (s *Server) horizon(term uint64) time.Time {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return time.Unix(0, s.fsm.st.rep.predecessorsUntil(term))
}

// staleList returns the stale components of file n for the wire; the
// caller holds fsm.mu.
func (st *state) staleList(n *inode) []uint32 {
	e := st.staleOf(n)
	if len(e.Comps) == 0 {
		return nil
	}
	out := make([]uint32, len(e.Comps))
	for i, c := range e.Comps {
		out[i] = c.Comp
	}
	return out
}

// layoutError serves rpc.MLayoutError: it marks the components of failed
// writes, truncates and commits stale (see the top of this file), has the
// data servers of components a read found corrupt check them at once
// (scrub.go), and answers with the file's layout.
func (s *Server) layoutError(ctx context.Context, r *rpc.LayoutErrorReq) (*rpc.LayoutGetResp, error) {
	if len(r.Errors) == 0 {
		return nil, errf(syscall.EINVAL, "layouterror of inode %d reports no error", r.Ino)
	}
	// It answers a new layout and capability: checked as a layoutget of a
	// handle the caller holds.
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayOpen(&c, r.Ino, r.Write, true) }); err != nil {
		return nil, err
	}
	var comps, corrupt, missing []uint32
	var ds, corruptDS []string
	seen := map[uint32]bool{}
	op := ""
	for _, e := range r.Errors {
		if e.Op == "read" {
			switch syscall.Errno(e.Errno) {
			case syscall.EIO:
				corrupt, corruptDS = append(corrupt, e.Comp), append(corruptDS, e.DS)
			case errnoShort:
				missing = append(missing, e.Comp) // missing.go
			}
			continue // an unreachable server is the heartbeats' business
		}
		if !seen[e.Comp] {
			seen[e.Comp] = true
			comps, ds, op = append(comps, e.Comp), append(ds, e.DS), e.Op
		}
	}
	if len(comps) > 0 {
		s.fsm.mu.RLock()
		n, err := s.fsm.st.node(r.Ino)
		none := err == nil && n.isFile() && n.Layout.Scheme.Kind == layout.KindNone
		s.fsm.mu.RUnlock()
		if none {
			return nil, errf(syscall.EIO, "inode %d has no redundancy: a failed component call cannot be routed around", r.Ino)
		}
		if _, err := s.apply(cmdStale, &staleCmd{Ino: r.Ino, Gen: r.Gen, Comps: comps, DS: ds, Reason: op, Strict: true}); err != nil {
			return nil, err
		}
		s.rmet.stale.Add(uint64(len(comps)))
		s.log.Warn("components_marked_stale", "inode", r.Ino, "gen", r.Gen, "comps", comps, "ds_ids", ds, "op", op)
		s.rb.kickNow()
	}
	if len(corrupt) > 0 {
		s.checkComponents(ctx, r.Ino, r.Gen, corrupt, corruptDS)
	}
	if len(missing) > 0 {
		s.markMissing(ctx, r.Ino, r.Gen, missing)
	}
	tag, err := clientTag(r.Job, r.Class)
	if err != nil {
		return nil, err
	}
	return s.layoutFor(ctx, r.Ino, r.Write, false, tag)
}

// layoutReturn accepts a returned layout; a write layout's return ends a
// writer (see writers).
func (s *Server) layoutReturn(_ context.Context, r *rpc.LayoutReturnReq) (*rpc.Empty, error) {
	if r.Write {
		s.wr.release(r.Ino)
	}
	return &rpc.Empty{}, nil
}

// layoutFor builds a LAYOUTGET answer for file ino: attributes, layout
// with addresses and stale set, and a capability. A write grant is
// recorded first (open: a new open, to be returned), so that the layout
// read is the one after any swap in progress.
// The caller's permission to open the file is checked before (layoutGet,
// layoutError); a writer's capability reads only if the caller may read.
func (s *Server) layoutFor(ctx context.Context, ino uint64, write, open bool, tag qos.Tag) (*rpc.LayoutGetResp, error) {
	readable := s.mayRead(ctx, ino)
	if write {
		exp := s.clock().Add(s.cfg.CapabilityTTL)
		if err := s.raiseHorizon(exp); err != nil {
			return nil, err
		}
		s.wr.grant(ino, exp, open)
		// A rebuild's recorded progress may miss this writer's bytes:
		// forget it before the writer has the layout. (After the grant:
		// an attempt that checks its watch before recording progress sees
		// the grant, or its record comes before this reset.)
		s.fsm.mu.RLock()
		reset := s.fsm.st.needsReset(ino)
		s.fsm.mu.RUnlock()
		if reset {
			if _, err := s.apply(cmdRebuildReset, &rebuildResetCmd{Ino: ino}); err != nil {
				return nil, err
			}
		}
	}
	s.fsm.mu.RLock()
	n, err := s.fsm.st.node(ino)
	if err != nil {
		s.fsm.mu.RUnlock()
		return nil, err
	}
	switch {
	case n.isDir():
		s.fsm.mu.RUnlock()
		return nil, errf(syscall.EISDIR, "inode %d is a directory: it has no layout", ino)
	case !n.isFile():
		s.fsm.mu.RUnlock()
		return nil, errf(syscall.EINVAL, "inode %d is not a regular file: it has no layout", ino)
	}
	resp := &rpc.LayoutGetResp{
		Attr: n.attr(),
		Layout: rpc.Layout{
			Spec:       n.Layout.String(),
			Generation: n.Layout.Generation,
			Targets:    n.Layout.Targets,
			Addrs:      make([]string, len(n.Layout.Targets)),
		},
		Stale: s.fsm.st.staleList(n),
	}
	for i, id := range n.Layout.Targets {
		resp.Layout.Addrs[i] = s.fsm.st.ds[id].Addr
	}
	s.fsm.mu.RUnlock()
	resp.Cap = s.grant(ctx, ino, resp.Layout.Generation, write, readable, tag)
	return resp, nil
}
