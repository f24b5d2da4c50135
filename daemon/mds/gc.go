package mds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Collection of orphaned data. When a file's last link goes, or an empty
// file gets a new layout, the FSM moves the old layout to its orphan queue
// (durable: it is FSM state); an inline file's last link queues nothing,
// its components were never written (spillInline removes what it wrote
// for a file that went meanwhile, with collectNow). The leader's GC loop
// removes each column's component from its data server under an admin
// token, all those a round has on one data server with one
// rpc.DRemoveMany (an older data server gets an rpc.DRemove each),
// leaving a tombstone there that refuses the capabilities granted for the
// generation until they have expired (daemon/ds/tombstone.go), so that no
// client holding one re-creates the component; then it applies a purgeCmd
// for the orphans that are gone everywhere. A data server that is down
// keeps its orphans queued until it is up again; a call that fails, or a
// component the data server could not remove, is retried with exponential
// backoff.
//
// A round starts gcGather after the first orphan of a burst, so that the
// orphans of many unlinks go in one round: their removals (every column
// of every orphan at once) reach each data server together, where they
// share the tombstone file's sync, and one purge entry covers them all.
// (A round per unlink cost every unlink a sync on each data server
// holding a column, on the disk raft syncs its log on: unlinks ran at an
// eighth of the rate without collection.)
//
// A burst's collection yields to the namespace's own changes, as
// rebuilds yield to foreground I/O: once gcYieldFrom orphans wait, a
// round, and each further round of the backlog, waits until gcGather has
// passed with no change proposed to raft, but no longer than gcMaxYield,
// and not at all once gcBacklog orphans wait. A burst of unlinks (rm -rf)
// so runs with a round a second beside it instead of back-to-back rounds
// whose data server syncs and purge entries slowed it (unlinks through a
// mount ran ~1.7x faster with collection off), and the rest is collected
// once it is over. The few orphans of ordinary work are collected
// gcGather after they come, as before: a deferred round gathers more
// orphans, and its removals open more connections to the data servers at
// once (go-fuse's FdLeak test counts the process's descriptors).
const (
	gcBatch       = 256                    // orphans looked at per round
	gcParallel    = 64                     // DRemove calls in flight to older data servers
	gcGather      = 100 * time.Millisecond // quiet wanted before a round
	gcYieldFrom   = 64                     // orphans waiting from which rounds yield
	gcMaxYield    = time.Second            // longest wait for quiet before a round
	gcBacklog     = 16384                  // orphans waiting past which rounds do not yield
	gcCallTimeout = 10 * time.Second       // per DRemove or DRemoveMany
	gcMinBackoff  = 100 * time.Millisecond
	gcMaxBackoff  = 30 * time.Second
)

// gcRetry is when an orphan whose removal failed may be tried again.
type gcRetry struct {
	next    time.Time
	backoff time.Duration
}

// kickGC wakes the GC loop without blocking.
func (s *Server) kickGC() { s.fsm.kick() }

// runGC is the GC loop, owned by the Server: it runs until ctx is done.
// It does work only while this node is the raft leader.
func (s *Server) runGC(ctx context.Context) {
	defer s.wg.Done()
	retry := map[orphanKey]gcRetry{}
	tick := time.NewTicker(s.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.fsm.orphaned:
		case <-tick.C:
		}
		if s.node.raft.State() != raft.Leader || s.orphanCount() == 0 {
			continue
		}
		if !s.gcYield(ctx, true) {
			return
		}
		// A full batch: there may be more.
		for s.gcRound(ctx, retry) && s.gcYield(ctx, false) {
		}
	}
}

// orphanCount is how many orphans wait for collection.
func (s *Server) orphanCount() int {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return len(s.fsm.st.orphans)
}

// gcYield waits before a round: gcGather first if gather is set (which
// gathers the orphans of a burst), then, while from gcYieldFrom to
// gcBacklog orphans wait, until gcGather passes with no change proposed
// to raft, for at most gcMaxYield in all. It reports false if ctx ended
// meanwhile.
func (s *Server) gcYield(ctx context.Context, gather bool) bool {
	start := time.Now()
	if gather && !sleepCtx(ctx, gcGather) {
		return false
	}
	for {
		n := s.orphanCount()
		if n < gcYieldFrom || n >= gcBacklog || time.Since(start) >= gcMaxYield {
			return true
		}
		seen := s.prop.queued.Load()
		if !sleepCtx(ctx, gcGather) {
			return false
		}
		if s.prop.queued.Load() == seen {
			return true
		}
	}
}

// sleepCtx waits d, or until ctx ends: then it reports false.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// gcRound tries to remove up to gcBatch orphans and purges those removed
// everywhere. It reports whether it found a full batch to try.
func (s *Server) gcRound(ctx context.Context, retry map[orphanKey]gcRetry) bool {
	now := s.clock()
	s.fsm.mu.RLock()
	var todo []orphan
	for k, o := range s.fsm.st.orphans {
		if r, ok := retry[k]; ok && now.Before(r.next) {
			continue
		}
		todo = append(todo, o)
		if len(todo) == gcBatch {
			break
		}
	}
	for k := range retry {
		if _, ok := s.fsm.st.orphans[k]; !ok {
			delete(retry, k) // purged, or gone with a restored snapshot
		}
	}
	s.fsm.mu.RUnlock()
	if len(todo) == 0 {
		return false
	}
	slices.SortFunc(todo, func(a, b orphan) int {
		return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Layout.Generation, b.Layout.Generation))
	})

	// Every column of every orphan at once: one DRemoveMany per data
	// server naming all its columns (up to rpc.MaxRemoveMany each), all
	// data servers in parallel, so that the removals reach each data
	// server together.
	type outcome struct {
		skipped atomic.Bool // a column's data server is down: not all gone
		failed  atomic.Bool // a call failed: back off
	}
	res := make([]outcome, len(todo))
	byDS := map[string][]gcColumn{}
	for i := range todo {
		for col, id := range todo[i].Layout.Targets {
			byDS[id] = append(byDS[id], gcColumn{o: &todo[i], i: i, col: col})
		}
	}
	sem := make(chan struct{}, gcParallel) // DRemoves to older data servers
	var wg sync.WaitGroup
	for id, cols := range byDS {
		for chunk := range slices.Chunk(cols, rpc.MaxRemoveMany) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k, r := range s.removeColumns(ctx, id, chunk, sem) {
					switch r {
					case columnDown:
						res[chunk[k].i].skipped.Store(true)
					case columnFailed:
						res[chunk[k].i].failed.Store(true)
					}
				}
			}()
		}
	}
	wg.Wait()

	var purged []orphanKey
	for i, o := range todo {
		k := orphanKey{Ino: o.Ino, Gen: o.Layout.Generation}
		switch {
		case !res[i].skipped.Load() && !res[i].failed.Load():
			purged = append(purged, k)
		case res[i].failed.Load():
			r := retry[k]
			r.backoff = min(max(2*r.backoff, gcMinBackoff), gcMaxBackoff)
			r.next = now.Add(r.backoff)
			retry[k] = r
		}
	}
	if len(purged) > 0 {
		if _, err := s.apply(cmdPurge, &purgeCmd{Orphans: purged}); err != nil {
			if ctx.Err() == nil { // not shutting down: retried next round
				s.log.Warn("gc_purge_failed", "orphans", len(purged), "err", err)
			}
			return false
		}
		for _, k := range purged {
			delete(retry, k)
		}
	}
	return len(todo) == gcBatch
}

// columnResult is what became of one column's component in a round.
type columnResult int

const (
	columnRemoved columnResult = iota // gone from its data server
	columnDown                        // its data server is down: left for a later round
	columnFailed                      // the call failed
)

// gcColumn is column col of orphan o, the i-th of a round.
type gcColumn struct {
	o   *orphan
	i   int
	col int
}

// removeColumns removes the components of cols, all on data server id,
// with one DRemoveMany, and returns what became of each. A data server
// that does not know the call (an older one) gets a DRemove per
// component instead, as many at a time as sem (shared by the round) has
// room for.
func (s *Server) removeColumns(ctx context.Context, id string, cols []gcColumn, sem chan struct{}) []columnResult {
	out := make([]columnResult, len(cols))
	if !s.reg.up(id) {
		for k := range out {
			out[k] = columnDown
		}
		return out
	}
	s.fsm.mu.RLock()
	addr := s.fsm.st.ds[id].Addr
	s.fsm.mu.RUnlock()
	req := &rpc.RemoveManyReq{Items: make([]rpc.DSReq, len(cols))}
	for k, c := range cols {
		req.Items[k] = s.removeReq(*c.o, c.col, true)
	}
	var resp rpc.RemoveManyResp
	cctx, cancel := context.WithTimeout(ctx, gcCallTimeout)
	err := s.dsc.Call(cctx, addr, rpc.DRemoveMany, req, &resp)
	cancel()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		var wg sync.WaitGroup
		for k, c := range cols {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				out[k] = s.removeColumn(ctx, *c.o, c.col, true)
			}()
		}
		wg.Wait()
		return out
	case err == nil && (len(resp.Errnos) != len(cols) || len(resp.Msgs) != len(cols)):
		err = fmt.Errorf("%d answers to %d removals", len(resp.Errnos), len(cols))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("gc_remove_failed", "ds_id", id, "ds_addr", addr, "components", len(cols), "err", err)
		}
		for k := range out {
			out[k] = columnFailed
		}
		return out
	}
	for k, c := range cols {
		var e error
		if resp.Errnos[k] != 0 {
			e = &rpc.Error{Errno: resp.Errnos[k], Msg: resp.Msgs[k]}
		}
		out[k] = s.removeResult(ctx, *c.o, c.col, id, addr, e)
	}
	return out
}

// collectNow removes every column's component of layout o at once, with
// a tombstone if tomb is set, outside the orphan queue: for components
// written for a file whose removal queued none (an inline file unlinked
// while spillInline wrote them out, or a spill that failed). What fails
// is logged (gc_remove_failed) and left to the GC scan.
func (s *Server) collectNow(ctx context.Context, o orphan, tomb bool) {
	var wg sync.WaitGroup
	for col := range o.Layout.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.removeColumn(ctx, o, col, tomb) == columnDown {
				s.log.Warn("gc_remove_failed", "inode", o.Ino, "gen", o.Layout.Generation, "col", col, "ds_id", o.Layout.Targets[col], "err", "data server down")
			}
		}()
	}
	wg.Wait()
}

// removeColumn removes the component of column col of an orphaned layout,
// leaving a tombstone if tomb is set.
func (s *Server) removeColumn(ctx context.Context, o orphan, col int, tomb bool) columnResult {
	id := o.Layout.Targets[col]
	if !s.reg.up(id) {
		return columnDown
	}
	s.fsm.mu.RLock()
	addr := s.fsm.st.ds[id].Addr
	s.fsm.mu.RUnlock()
	req := s.removeReq(o, col, tomb)
	cctx, cancel := context.WithTimeout(ctx, gcCallTimeout)
	err := s.dsc.Call(cctx, addr, rpc.DRemove, &req, &rpc.DSResp{})
	cancel()
	return s.removeResult(ctx, o, col, id, addr, err)
}

// removeReq is the DRemove of column col of an orphaned layout, with a
// tombstone if tomb is set.
func (s *Server) removeReq(o orphan, col int, tomb bool) rpc.DSReq {
	id := o.Layout.Targets[col]
	req := rpc.DSReq{
		Cap: s.adminToken(o.Ino, o.Layout.Generation, uint32(col), id, 0),
		ID:  rpc.ComponentID{Ino: o.Ino, Gen: o.Layout.Generation, Col: uint32(col)},
	}
	if tomb {
		// Capabilities of the generation were granted before it went
		// and expire within a TTL; twice that covers the clock skew
		// between MDS replicas, as the write-grant horizon does.
		req.Tombstone = s.clock().Add(2 * s.cfg.CapabilityTTL).UnixNano()
	}
	return req
}

// removeResult is what the removal of column col of o on data server id
// (addr) that ended with err did; a component that was not there is gone.
func (s *Server) removeResult(ctx context.Context, o orphan, col int, id, addr string, err error) columnResult {
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		if ctx.Err() == nil {
			s.log.Warn("gc_remove_failed", "inode", o.Ino, "gen", o.Layout.Generation, "col", col, "ds_id", id, "ds_addr", addr, "err", err)
		}
		return columnFailed
	}
	return columnRemoved
}
