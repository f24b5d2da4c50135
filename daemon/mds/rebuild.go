package mds

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/qos"
)

// The rebuild manager, a goroutine of the leader (runRebuild), recreates
// the components that need it on healthy data servers:
//
//   - stale components (stale.go): rebuilt in place if their data server is
//     up (a scrub repair rewrites the component where it is), elsewhere if
//     it has been down for RebuildDelay;
//   - components whose data server has been down for RebuildDelay;
//   - components on a draining data server (drain.go), copied from it;
//   - components with a rebuild intent left by an earlier leader;
//   - blocks scrub found corrupt in a component of a mirror or rs file:
//     only those blocks are rewritten, in place (rebuild_blocks.go);
//   - when nothing else needs doing and the data servers' fills differ by
//     more than RebalanceSpread, components moved from the fullest to the
//     emptiest (rebalance.go).
//
// It scans the FSM when something changed (a stale mark, a drain, a kick)
// and at least every rebuildScanEvery heartbeat intervals, and runs at most
// RebuildParallel components at once. Each is copied (from its own data
// server when that is up and the copy is good, from another mirror copy,
// or rebuilt from K of the K+M components of an rs file; rebuild_copy.go)
// onto the target recorded first in the FSM (rebuildStartCmd), committed,
// and swapped into the layout (rebuildDoneCmd: same generation, the stale
// mark cleared, the displaced copy a stray collected after CapabilityTTL).
// All rebuilds share a token bucket of RebuildRate bytes a second, and
// pause while a data server they use reports more than RebuildYieldLoad
// foreground calls in flight (the data servers do not count rebuild and
// scrub calls, rpc.ClassRebuild).
//
// A file open for writing is not rebuilt until its writers return their
// layouts (stale.go, writers). Everything the manager needs survives a
// change of leader in the FSM: the new leader's scan finds the stale
// marks, drains and intents again and carries on; a component that was
// being copied is copied again, onto the same target if it is still good.
// Progress counters (`strata admin rebuild status`) are the leader's own
// and start again at zero.
type rebuilder struct {
	s      *Server
	bucket *qos.Bucket
	dsc    *rpc.Client   // calls to data servers, owned: closed when the loop ends
	kick   chan struct{} // buffered 1: scan now
	wake   chan struct{} // buffered 1: a worker finished, dispatch now

	mu       sync.Mutex
	tasks    map[compKey]*task
	term     uint64
	done     uint64
	failed   uint64
	bytes    uint64
	active   time.Time // when the queue last became non-empty
	activeB  uint64    // bytes at that time
	lastScan time.Time
	led      []uint64  // the latest terms this node led (maxLedTerms)
	since    time.Time // when this node took office for term

	quietUntil time.Time // no rebalancing moves planned before, unless quietKey changes (rebalance.go)
	quietKey   string
}

// maxLedTerms bounds the terms a rebuilder remembers having led.
const maxLedTerms = 16

// rebuildScanEvery is how many heartbeat intervals may pass between two
// scans of the FSM when nothing kicked the manager: the bound on how late
// a data server that has just exceeded RebuildDelay is noticed.
const rebuildScanEvery = 5

// task is one component to rebuild. Fields are guarded by rebuilder.mu,
// but for copied, which the worker updates atomically through progress.
type task struct {
	key    compKey
	gen    uint64
	from   string
	reason string // stale reason, "down", "drain", "resume", "scrub", "rebalance"
	state  string // queued, running, waiting, blocked
	detail string
	to     string
	size   uint64
	copied uint64
	retry  time.Time // not before
	fails  int
	found  int64 // reason "scrub": the damage record being repaired (its Found)
}

func newRebuilder(s *Server) *rebuilder {
	rate := s.cfg.RebuildRate
	return &rebuilder{
		s:      s,
		bucket: qos.NewBucket(rate, max(rate/4, rebuildWindow), s.clock),
		dsc:    rpc.NewClient(rpc.ClientConfig{Timeout: rebuildCallTimeout, MaxConnsPerHost: 4 * s.cfg.RebuildParallel, TLS: s.tls.client}),
		kick:   make(chan struct{}, 1),
		wake:   make(chan struct{}, 1),
		tasks:  map[compKey]*task{},
	}
}

// kickNow wakes the manager for a scan without blocking.
func (rb *rebuilder) kickNow() {
	select {
	case rb.kick <- struct{}{}:
	default:
	}
}

// runRebuild is the manager's loop, owned by the Server: it runs until
// ctx is done and waits for its workers. It works only while this node is
// the leader.
func (s *Server) runRebuild(ctx context.Context) {
	defer s.wg.Done()
	rb := s.rb
	var workers sync.WaitGroup
	defer func() {
		workers.Wait()
		rb.dsc.Close()
	}()
	tick := time.NewTicker(s.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		kicked := false
		select {
		case <-ctx.Done():
			return
		case <-rb.kick:
			kicked = true
		case <-rb.wake:
		case <-tick.C:
		}
		r := s.node.raft
		if r.State() != raft.Leader {
			rb.resign()
			continue
		}
		if term := r.CurrentTerm(); term != rb.termOf() {
			// The FSM must hold every entry of earlier terms before the
			// write-grant horizon is read.
			if err := awaitFuture(ctx, r.Barrier(applyTimeout)); err != nil {
				continue
			}
			rb.takeOffice(term)
		}
		if s.clock().Sub(rb.officeSince()) < s.cfg.HeartbeatTimeout {
			// The registry gives every data server one timeout of grace
			// after a change of leader: until they have reported, a server
			// that is down looks up and one that is up has unknown space.
			// Deciding now would abort rebuilds that are still needed.
			continue
		}
		s.syncDraining()
		s.collectStrays(ctx)
		if kicked || s.clock().Sub(rb.lastScanned()) >= rebuildScanEvery*s.cfg.HeartbeatInterval {
			s.scanRebuilds()
		}
		rb.dispatch(ctx, &workers)
	}
}

func (rb *rebuilder) termOf() uint64 {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.term
}

func (rb *rebuilder) officeSince() time.Time {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.since
}

func (rb *rebuilder) lastScanned() time.Time {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.lastScan
}

// takeOffice starts a term: the writers of earlier leaders are unknown
// until the write-grant horizon (stale.go), the counters start again.
func (rb *rebuilder) takeOffice(term uint64) {
	rb.s.wr.takeOffice(rb.s.horizon(term))
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.term = term
	rb.since = rb.s.clock()
	rb.led = append(rb.led, term)
	if len(rb.led) > maxLedTerms {
		rb.led = rb.led[1:]
	}
	rb.done, rb.failed, rb.bytes = 0, 0, 0
	rb.active, rb.activeB = time.Time{}, 0
	rb.lastScan = time.Time{}
	for k, t := range rb.tasks {
		if t.state != "running" {
			delete(rb.tasks, k)
		}
	}
	rb.s.log.Info("rebuild_manager_took_office", "term", term)
}

// ledTerm reports whether this node's rebuild manager led term: an intent
// of that term was recorded by one of its own attempts, which have ended
// by the time another attempt of the same component runs.
func (rb *rebuilder) ledTerm(term uint64) bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return slices.Contains(rb.led, term)
}

// resign forgets the plan of a node that no longer leads; running workers
// fail at their next raft command.
func (rb *rebuilder) resign() {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if rb.term == 0 {
		return
	}
	rb.term = 0
	for k, t := range rb.tasks {
		if t.state != "running" {
			delete(rb.tasks, k)
		}
	}
}

// reasonRank orders tasks: redundancy already lost first, then moves.
func reasonRank(reason string) int {
	switch reason {
	case "scrub":
		return 1
	case "drain":
		return 2
	case "down", "resume":
		return 1
	case "rebalance":
		return 3
	}
	return 0
}

// scanRebuilds finds the components that need a rebuild and replaces the
// plan with them (running tasks stay); it forgets the failure-handling
// state of files that are gone.
func (s *Server) scanRebuilds() {
	rb := s.rb
	views := s.reg.views()
	longDown := map[string]bool{}
	for id, v := range views {
		if !v.up && v.downFor >= s.cfg.RebuildDelay {
			longDown[id] = true
		}
	}
	plan := map[compKey]*task{}
	var forget []uint64
	rebalance := needsRebalance(views, s.cfg.RebalanceSpread) && rb.mayPlanMoves(views)
	quiet := false
	var moving []move
	if rebalance {
		moving = rb.runningMoves()
	}
	s.fsm.mu.RLock()
	st := s.fsm.st
	rep := st.rep
	for ino, e := range rep.stale {
		if n := st.get(ino); n == nil || !n.isFile() || n.Layout.Generation != e.Gen {
			forget = append(forget, ino)
		}
	}
	for k, in := range rep.rebuilds {
		n := st.get(k.Ino)
		if n == nil || !n.isFile() || n.Layout.Generation != in.Gen {
			forget = append(forget, k.Ino)
			continue
		}
		plan[k] = &task{key: k, gen: in.Gen, from: n.Layout.Targets[k.Comp], reason: "resume"}
	}
	for k, d := range rep.damaged {
		n := st.get(k.Ino)
		if n == nil || !n.isFile() || n.Layout.Generation != k.Gen {
			forget = append(forget, k.Ino)
			continue
		}
		key := compKey{Ino: k.Ino, Comp: k.Col}
		if n.Layout.Scheme.Kind == layout.KindNone || int(k.Col) >= len(n.Layout.Targets) || n.Layout.Targets[k.Col] != d.DS || st.staleOf(n).has(k.Col) {
			continue // nothing to repair from, or a rebuild rewrites it whole
		}
		if _, ok := plan[key]; !ok {
			plan[key] = &task{key: key, gen: k.Gen, from: d.DS, reason: "scrub", size: uint64(len(d.Blocks)) * uint64(d.BlockSize), found: d.Found}
		}
	}
	if len(rep.stale) > 0 || len(rep.draining) > 0 || len(longDown) > 0 {
		for ino, n := range st.inodes {
			if !n.onDS() {
				continue
			}
			stale := st.staleOf(n)
			for comp, id := range n.Layout.Targets {
				k := compKey{Ino: ino, Comp: uint32(comp)}
				reason := ""
				switch {
				case stale.has(k.Comp):
					reason = "stale"
				case longDown[id]:
					reason = "down"
				case rep.draining[id]:
					reason = "drain"
				}
				if reason != "" {
					plan[k] = &task{key: k, gen: n.Layout.Generation, from: id, reason: reason, size: compBytes(n.Layout, n.Size, comp)}
				}
			}
		}
	}
	if rebalance && len(plan) == 0 {
		servers, comps := st.rebalanceCandidates(views, moving)
		moves := planRebalance(servers, comps, s.cfg.RebalanceSpread, rebalanceBatch*s.cfg.RebuildParallel)
		for _, m := range moves {
			plan[m.c.key] = &task{key: m.c.key, gen: m.c.gen, from: m.c.from, reason: "rebalance", to: m.to, size: m.c.size}
		}
		quiet = len(moves) == 0 && len(moving) == 0 // as even as whole components allow
	}
	s.fsm.mu.RUnlock()
	if quiet {
		rb.quietMoves(views)
	}
	if len(forget) > 0 {
		slices.Sort(forget)
		forget = slices.Compact(forget)
		if _, err := s.apply(cmdRepairForget, &repairForgetCmd{Inos: forget, Now: s.now()}); err != nil {
			s.log.Warn("rebuild_forget_failed", "inodes", len(forget), "err", err)
		}
	}
	now := s.clock()
	rb.mu.Lock()
	defer rb.mu.Unlock()
	rb.lastScan = now
	for k, t := range rb.tasks {
		if t.state == "running" {
			continue
		}
		p, ok := plan[k]
		if !ok {
			delete(rb.tasks, k)
			continue
		}
		if p.reason != t.reason || p.found != t.found || p.reason == "rebalance" && p.to != t.to {
			continue // another job for the component: start afresh
		}
		p.state, p.detail, p.retry, p.fails, p.to = t.state, t.detail, t.retry, t.fails, t.to
		if p.size == 0 {
			p.size = t.size
		}
	}
	for k, p := range plan {
		if t, ok := rb.tasks[k]; ok && t.state == "running" {
			continue
		}
		if p.state == "" {
			p.state = "queued"
		}
		rb.tasks[k] = p
	}
	if len(rb.tasks) > 0 && rb.active.IsZero() {
		rb.active, rb.activeB = now, rb.bytes
	} else if len(rb.tasks) == 0 {
		rb.active = time.Time{}
	}
}

// dispatch starts workers for the tasks that may run, up to
// RebuildParallel at once.
func (rb *rebuilder) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	now := rb.s.clock()
	rb.mu.Lock()
	defer rb.mu.Unlock()
	running := 0
	var ready []*task
	for _, t := range rb.tasks {
		switch {
		case t.state == "running":
			running++
		case !now.Before(t.retry):
			ready = append(ready, t)
		}
	}
	slices.SortFunc(ready, func(a, b *task) int {
		return cmp.Or(cmp.Compare(reasonRank(a.reason), reasonRank(b.reason)), cmp.Compare(a.key.Ino, b.key.Ino), cmp.Compare(a.key.Comp, b.key.Comp))
	})
	term := rb.term
	for _, t := range ready {
		if running >= rb.s.cfg.RebuildParallel {
			break
		}
		t.state, t.detail, t.copied = "running", "", 0
		running++
		wg.Add(1)
		go func() {
			defer wg.Done()
			rb.run(ctx, t, term)
		}()
	}
}

// outcome is how a rebuild attempt ended.
type outcome struct {
	state  string // done, waiting, blocked, failed, gone
	detail string
}

// run rebuilds one component and files the outcome.
func (rb *rebuilder) run(ctx context.Context, t *task, term uint64) {
	out, err := rb.s.rebuildOne(ctx, t, term)
	switch {
	case errors.Is(err, errNotLeaderTerm) && ctx.Err() == nil:
		// Not the task's fault: the next leader (maybe this node again)
		// resumes the copy from its last checkpoint.
		out = outcome{state: "queued", detail: "leadership changed: resumes from the last checkpoint"}
		rb.s.log.Info("rebuild_interrupted", "inode", t.key.Ino, "comp", t.key.Comp, "to", t.to, "term", term, "copied", t.copied)
	case err != nil && ctx.Err() == nil:
		out = outcome{state: "failed", detail: err.Error()}
		rb.s.log.Warn("rebuild_failed", "inode", t.key.Ino, "comp", t.key.Comp, "from", t.from, "to", t.to, "err", err)
	}
	defer func() {
		select {
		case rb.wake <- struct{}{}:
		default:
		}
	}()
	now := rb.s.clock()
	rb.mu.Lock()
	defer rb.mu.Unlock()
	iv := rb.s.cfg.HeartbeatInterval
	switch out.state {
	case "done":
		rb.done++
		delete(rb.tasks, t.key)
		rb.s.rmet.rebuilt.Add(1)
		rb.s.log.Info("component_rebuilt", "inode", t.key.Ino, "comp", t.key.Comp, "from", t.from, "to", t.to, "reason", t.reason, "bytes", t.copied)
		return
	case "gone":
		delete(rb.tasks, t.key)
		return
	case "failed":
		rb.failed++
		t.fails++
		t.state, t.detail = "queued", out.detail
		t.retry = now.Add(min(iv<<min(t.fails, 8), time.Minute))
		return
	case "queued":
		t.state, t.detail, t.retry = out.state, out.detail, now
		return
	}
	t.state, t.detail = out.state, out.detail
	t.retry = now.Add(2 * iv)
	if out.state == "blocked" {
		t.retry = now.Add(rebuildScanEvery * iv)
	}
}

// progress adds n copied bytes to task t.
func (rb *rebuilder) progress(t *task, n uint64) {
	rb.mu.Lock()
	t.copied += n
	rb.bytes += n
	rb.mu.Unlock()
	rb.s.rmet.rebuildBytes.Add(n)
}

// status serves rpc.MRebuildStatus.
func (s *Server) rebuildStatus(_ context.Context, _ *rpc.Empty) (*rpc.RebuildStatusResp, error) {
	rb := s.rb
	now := s.clock()
	rb.mu.Lock()
	resp := &rpc.RebuildStatusResp{Done: rb.done, Failed: rb.failed, BytesDone: rb.bytes}
	if s.cfg.RebuildRate > 0 {
		resp.RateLimit = uint64(s.cfg.RebuildRate)
	}
	if !rb.active.IsZero() {
		if el := now.Sub(rb.active).Seconds(); el > 0 {
			resp.Rate = float64(rb.bytes-rb.activeB) / el
		}
	}
	tasks := slices.Collect(maps.Values(rb.tasks))
	slices.SortFunc(tasks, func(a, b *task) int {
		return cmp.Or(cmp.Compare(a.key.Ino, b.key.Ino), cmp.Compare(a.key.Comp, b.key.Comp))
	})
	for _, t := range tasks {
		switch t.state {
		case "running":
			resp.Running++
		case "waiting":
			resp.Waiting++
		case "blocked":
			resp.Blocked++
		default:
			resp.Queued++
		}
		if t.size > t.copied {
			resp.BytesLeft += t.size - t.copied
		}
		resp.Tasks = append(resp.Tasks, rpc.RebuildTask{
			Ino: t.key.Ino, Comp: t.key.Comp, From: t.from, To: t.to, Reason: t.reason,
			State: t.state, Detail: t.detail, Bytes: t.copied, Size: t.size,
		})
		if t.state == "blocked" && t.detail == noRedundancy {
			resp.Unrecovered++
		}
	}
	rb.mu.Unlock()
	if resp.Rate > 0 && resp.BytesLeft > 0 {
		resp.ETASeconds = float64(resp.BytesLeft) / resp.Rate
	}
	if len(resp.Tasks) > maxStatusTasks {
		resp.Tasks = resp.Tasks[:maxStatusTasks]
	}
	s.fillPaths(resp.Tasks)
	return resp, nil
}

// maxStatusTasks bounds the tasks a status lists.
const maxStatusTasks = 200

// fillPaths sets the path of each task's file where one is found.
func (s *Server) fillPaths(tasks []rpc.RebuildTask) {
	want := map[uint64]bool{}
	for _, t := range tasks {
		want[t.Ino] = true
	}
	paths := s.pathsOf(want)
	for i := range tasks {
		tasks[i].Path = paths[tasks[i].Ino]
	}
}

// pathsOf returns a path of each wanted inode that is linked somewhere, by
// walking the directories (files have no parent pointer).
func (s *Server) pathsOf(want map[uint64]bool) map[uint64]string {
	out := map[uint64]string{}
	if len(want) == 0 {
		return out
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	st := s.fsm.st
	dirPath := func(d uint64) string {
		var parts []string
		for i := 0; i < maxDepth && d != rpc.RootIno; i++ {
			n := st.get(d)
			if n == nil {
				return ""
			}
			p := st.get(n.Parent)
			if p == nil {
				return ""
			}
			name := ""
			for nm, c := range p.Entries {
				if c == d {
					name = nm
					break
				}
			}
			parts = append(parts, name)
			d = n.Parent
		}
		slices.Reverse(parts)
		return "/" + joinPath(parts)
	}
	for _, n := range st.inodes {
		if !n.isDir() {
			continue
		}
		for name, c := range n.Entries {
			if want[c] {
				if _, ok := out[c]; !ok {
					dp := dirPath(n.Ino)
					if dp == "/" {
						out[c] = "/" + name
					} else {
						out[c] = dp + "/" + name
					}
				}
			}
		}
	}
	return out
}

func joinPath(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += "/"
		}
		out += p
	}
	return out
}

// runningMoves returns the rebalancing moves under way.
func (rb *rebuilder) runningMoves() []move {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	var out []move
	for _, t := range rb.tasks {
		if t.state == "running" && t.reason == "rebalance" {
			out = append(out, move{c: movable{key: t.key, gen: t.gen, from: t.from, size: t.size}, to: t.to})
		}
	}
	return out
}

// targetsInUse counts the running tasks by target.
func (rb *rebuilder) targetsInUse() map[string]int {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	out := map[string]int{}
	for _, t := range rb.tasks {
		if t.state == "running" && t.to != "" {
			out[t.to]++
		}
	}
	return out
}

// blockedRepairs returns the components whose damaged blocks cannot be
// repaired now (too little redundancy left).
func (rb *rebuilder) blockedRepairs() map[compKey]bool {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	out := map[compKey]bool{}
	for k, t := range rb.tasks {
		if t.reason == "scrub" && t.state == "blocked" {
			out[k] = true
		}
	}
	return out
}

// noRedundancy is the detail of a component that cannot be rebuilt: its
// data server is down and nothing else holds its bytes.
const noRedundancy = "no redundancy left to rebuild from: waits for its data server"

// errNotLeaderTerm ends a rebuild when this node no longer leads the term it
// started in.
var errNotLeaderTerm = errors.New("mds: leadership changed during the rebuild")
