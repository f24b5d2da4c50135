package mds

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/layout"
)

// Moving a component's bytes: the rebuild manager's data path. The MDS
// moves no file byte: it tells the data server that is to hold the
// component (the target) to fill it, window by window (rebuildWindow
// bytes, rebuildInflight at a time, paced by the rate limit), from the
// sources it names: copies of the component, or K of the K+M components
// of an rs file, which the target reads itself with read capabilities the
// MDS signs for each (one component on one data server), verifies and
// decodes (daemon/ds rebuild.go). Every component of an rs:K+M file holds
// a row's unit at the same component offset, so a window of the lost
// component is decoded from the same window of any K others; a component
// shorter than a window reads as zeros past its end, as the clients read
// it.
//
// The target assembles the component in a staged copy under a temporary
// name (daemon/ds stage.go): started afresh, or resumed at the last
// checkpoint; all-zero windows stay holes. Once every window is in, it is
// cut to the component's size, made durable and renamed into place
// (publish), and only then is it swapped into the layout in raft. A
// rebuild cut short anywhere leaves at most a staged copy, never a
// half-written component readable as data; an in-place rebuild (a stale
// component on a server that is up) replaces the component whole, so a
// reader sees the old bytes or the new ones.
const (
	rebuildCallTimeout = 30 * time.Second
	rebuildWindow      = 2 << 20
	rebuildInflight    = 4
	strayBatch         = 64
)

// rebuildToken is the capability of one of the MDS's rebuild calls: admin
// for the one component it reads or writes on the one data server it
// calls (so that a target cannot replay it for another file, column or
// server), and of class rebuild, so that the data servers do not count
// the calls as foreground load.
func (s *Server) rebuildToken(id rpc.ComponentID, ds string) capability.Token {
	return s.adminToken(id.Ino, id.Gen, id.Col, ds, rpc.ClassRebuild)
}

// fileSnap is what a rebuild reads of the FSM at its start.
type fileSnap struct {
	ino       uint64
	l         layout.Layout
	size      uint64
	stale     map[uint32]bool
	intent    rebuildIntent
	hasIntent bool
	addrs     map[string]string // data server id -> address
	nodes     map[string]string // data server id -> node
	strays    map[string]bool   // data servers holding a stray of this component
	damaged   *damagedRecord    // blocks of the component that fail their checksum
}

// snapFile reads task t's file; ok is false if the component is no longer
// where the task found it.
func (s *Server) snapFile(t *task) (fileSnap, bool) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	st := s.fsm.st
	n := st.get(t.key.Ino)
	if n == nil || !n.isFile() || n.Layout.Generation != t.gen || int(t.key.Comp) >= len(n.Layout.Targets) || n.Layout.Targets[t.key.Comp] != t.from {
		return fileSnap{}, false
	}
	fs := fileSnap{
		ino: t.key.Ino, l: n.Layout, size: n.Size, stale: st.staleOf(n).set(),
		addrs: map[string]string{}, nodes: map[string]string{}, strays: map[string]bool{},
	}
	fs.intent, fs.hasIntent = st.rep.rebuilds[t.key]
	for id, d := range st.ds {
		fs.addrs[id], fs.nodes[id] = d.Addr, st.nodeOf(id)
	}
	if d, ok := st.rep.damaged[damagedKey{Ino: t.key.Ino, Gen: t.gen, Col: t.key.Comp}]; ok && d.DS == t.from {
		fs.damaged = &d
	}
	for k := range st.rep.strays {
		if k.Ino == t.key.Ino && k.Gen == t.gen && k.Col == t.key.Comp {
			fs.strays[k.DS] = true
		}
	}
	return fs, true
}

// sources is where a component's bytes come from: copies holding the same
// bytes (tried in order), or, for rs, the other components to decode from.
type sources struct {
	copies []int
	rs     []int
}

// planSources picks the sources of component comp, or returns nil and why
// there are none. The component itself is one if it is good: not stale, up,
// no damaged blocks.
func planSources(fs fileSnap, comp int, views map[string]dsView) (*sources, string) {
	l := fs.l
	ok := func(c int) bool { return !fs.stale[uint32(c)] && views[l.Targets[c]].up }
	src := &sources{}
	if ok(comp) && fs.damaged == nil {
		src.copies = append(src.copies, comp)
	}
	switch l.Scheme.Kind {
	case layout.KindMirror:
		col := comp % l.Width
		for r := 0; r < l.Scheme.N; r++ {
			if c := l.MirrorComponent(col, r); c != comp && ok(c) {
				src.copies = append(src.copies, c)
			}
		}
	case layout.KindRS:
		if len(src.copies) == 0 {
			for c := range l.Targets {
				if c != comp && ok(c) {
					src.rs = append(src.rs, c)
				}
			}
			if len(src.rs) < l.Scheme.K {
				return nil, fmt.Sprintf("only %d of the other %d components are readable, %d needed", len(src.rs), len(l.Targets)-1, l.Scheme.K)
			}
			return src, ""
		}
	}
	if len(src.copies) == 0 {
		return nil, noRedundancy
	}
	return src, ""
}

// pickTarget chooses where component t.key.Comp goes: in place when a
// stale component's data server is up and not draining, else a data server
// that is up, not draining, and on a node no other component of the file
// uses: the one with the fewest rebuilds running onto it, then the most
// free space. The intent of an earlier attempt is
// kept if its target still qualifies. An empty result comes with the
// outcome to file.
func (s *Server) pickTarget(fs fileSnap, t *task, term uint64, views map[string]dsView, need uint64) (string, outcome) {
	from := t.from
	fv := views[from]
	stale := fs.stale[t.key.Comp]
	if stale && fv.up && !fv.draining {
		return from, outcome{}
	}
	if stale && !fv.up && fv.downFor < s.cfg.RebuildDelay && !fv.draining {
		return "", outcome{state: "waiting", detail: fmt.Sprintf("%s is down: rebuilt in place if it is back within %v", from, s.cfg.RebuildDelay)}
	}
	used := map[string]bool{}
	for c, id := range fs.l.Targets {
		if c != int(t.key.Comp) {
			used[fs.nodes[id]] = true
		}
	}
	good := func(id string) bool {
		v, known := views[id]
		_, registered := fs.addrs[id]
		return known && registered && v.up && !v.draining && id != from && !used[fs.nodes[id]] && !fs.strays[id] && v.free >= need
	}
	// An earlier attempt's target is kept when the copy got partway
	// through (Done) or this node made the attempt: at once if this node
	// made it (its attempt has ended: this one replaces it), else once the
	// leader that made it has surely stopped writing.
	mine := fs.hasIntent && s.rb.ledTerm(fs.intent.Term)
	if in := fs.intent; fs.hasIntent && in.Gen == t.gen && (in.Done > 0 || mine) && !in.Dirty && in.Term != term && good(in.To) {
		if !mine {
			if wait := s.fenceOld() - s.clock().Sub(s.leases.office()); wait > 0 {
				return "", outcome{state: "waiting", detail: fmt.Sprintf("resumes onto %s at %s of %s in %v, once the previous leader has stopped", in.To, layout.FormatSize(int64(in.Done)), layout.FormatSize(int64(need)), wait.Round(time.Millisecond))}
			}
		}
		return in.To, outcome{}
	}
	// A move planned by rebalancing goes where it was planned, or is
	// planned again.
	if t.reason == "rebalance" {
		if good(t.to) {
			return t.to, outcome{}
		}
		return "", outcome{state: "gone"}
	}
	// An intent of this term is resumed onto its target; one of an earlier
	// leader is not (that leader may still be writing to it, if it has not
	// noticed yet that it lost office): its target becomes a stray.
	if fs.hasIntent && fs.intent.Gen == t.gen && fs.intent.Term == term && good(fs.intent.To) {
		return fs.intent.To, outcome{}
	}
	// An earlier leader's target is avoided while it may still be
	// writing; but when it is the only data server that qualifies, it is
	// reused once that leader has surely stopped (it checks its office
	// before every window). Both rebuild the same bytes from the same
	// survivors while the file's writers are held, so a late window of
	// the old leader writes what the new one writes.
	oldTarget := ""
	if fs.hasIntent && fs.intent.Term != term {
		oldTarget = fs.intent.To
		fs.strays[oldTarget] = true
	}
	// Spread concurrent rebuilds: fewest rebuilds running onto it first,
	// then the most free space.
	busy := s.rb.targetsInUse()
	best := ""
	for id := range views {
		if !good(id) {
			continue
		}
		if best == "" || busy[id] < busy[best] ||
			busy[id] == busy[best] && (views[id].free > views[best].free || views[id].free == views[best].free && id < best) {
			best = id
		}
	}
	if best == "" && oldTarget != "" {
		delete(fs.strays, oldTarget)
		if good(oldTarget) {
			if wait := s.fenceOld() - s.clock().Sub(s.leases.office()); wait > 0 {
				return "", outcome{state: "waiting", detail: fmt.Sprintf("%s, the only target, was the previous leader's: reused in %v, once that leader has stopped", oldTarget, wait.Round(time.Millisecond))}
			}
			return oldTarget, outcome{}
		}
	}
	if best == "" {
		return "", outcome{state: "blocked", detail: fmt.Sprintf("no data server that is up and not draining, on a node this file does not use, has %s free", layout.FormatSize(int64(need)))}
	}
	return best, outcome{}
}

// fenceOld is how long after taking office a leader waits before it
// rebuilds onto the target an earlier leader was writing: that leader
// notices it lost office within its lease (RaftTimeout) and stops before
// its next window, which the rate limit may spread over a while.
func (s *Server) fenceOld() time.Duration {
	window := time.Second
	if s.cfg.RebuildRate > 0 {
		window = max(window, time.Duration(float64(rebuildWindow)/float64(s.cfg.RebuildRate)*float64(time.Second)))
	}
	return 2*s.cfg.RaftTimeout + window
}

// leads reports whether this node leads in term.
func (s *Server) leads(term uint64) bool {
	r := s.node.raft
	return r.State() == raft.Leader && r.CurrentTerm() == term
}

// rebuildOne makes one attempt at task t: plan, record the intent, copy,
// commit and swap. Its outcome is done, gone (nothing to do), waiting or
// blocked; an error is a failed attempt.
func (s *Server) rebuildOne(ctx context.Context, t *task, term uint64) (outcome, error) {
	if t.reason == "scrub" {
		return s.repairBlocks(ctx, t, term)
	}
	fs, ok := s.snapFile(t)
	if !ok {
		return outcome{state: "gone"}, nil
	}
	comp := int(t.key.Comp)
	views := s.reg.views()
	// An intent of an earlier leader (reason resume) whose data server is
	// still down goes on: that leader found it down for RebuildDelay, and
	// this one's count of how long it has been down started at its office.
	if fv := views[t.from]; t.reason != "rebalance" && !fs.stale[t.key.Comp] && !fv.draining && (fv.up || fv.downFor < s.cfg.RebuildDelay && t.reason != "resume") {
		// Healed meanwhile: the mark was cleared, the server is back.
		if fs.hasIntent {
			if _, err := s.apply(cmdRebuildAbort, &rebuildAbortCmd{Ino: fs.ino, Comp: t.key.Comp, Now: s.now()}); err != nil {
				return outcome{}, fmt.Errorf("drop rebuild intent: %w", err)
			}
		}
		return outcome{state: "gone"}, nil
	}
	// The component moves off a live data server (drain, rebalance, a
	// stale copy): clients holding layouts of the file (the NFS front
	// end's) are asked to return them, so that writers let go. A copy on
	// a dead data server is not recalled for: nobody does I/O there, and
	// a writer skips it until it closes.
	live := views[t.from].up
	if live {
		s.recallLayouts(fs.ino)
	}
	// Watch before looking for writers: a grant between the look and the
	// watch would go unseen.
	wt := s.wr.watch(fs.ino)
	defer s.wr.unwatch(wt)
	if why := s.wr.busy(fs.ino); why != "" {
		return outcome{state: "waiting", detail: why}, nil
	}
	src, why := planSources(fs, comp, views)
	if src == nil {
		return outcome{state: "blocked", detail: why}, nil
	}
	to, out := s.pickTarget(fs, t, term, views, compBytes(fs.l, fs.size, comp))
	if to == "" {
		return out, nil
	}
	// Resume where an earlier attempt onto the same target got to, unless
	// the file was granted for writing since (Dirty).
	var resume uint64
	if in := fs.intent; fs.hasIntent && in.To == to && in.Gen == t.gen && !in.Dirty {
		resume = in.Done
	}
	s.rb.mu.Lock()
	t.to = to
	t.copied = resume
	s.rb.mu.Unlock()
	if in := fs.intent; !fs.hasIntent || in.To != to || in.Gen != t.gen || in.Term != term || in.Dirty {
		if !s.leads(term) {
			return outcome{}, errNotLeaderTerm
		}
		if _, err := s.apply(cmdRebuildStart, &rebuildStartCmd{Ino: fs.ino, Gen: t.gen, Comp: t.key.Comp, From: t.from, To: to, Now: s.now(), Term: term, Done: resume}); err != nil {
			return outcome{}, fmt.Errorf("record rebuild intent: %w", err)
		}
	}
	if resume > 0 {
		s.log.Info("rebuild_resumed", "inode", fs.ino, "comp", comp, "to", to, "from_offset", resume)
	}
	size, err := s.rebuildSize(ctx, fs, comp, src)
	if err != nil {
		return outcome{}, err
	}
	s.rb.mu.Lock()
	t.size = size
	s.rb.mu.Unlock()
	if err := s.copyComponent(ctx, t, term, wt, fs, src, to, size, resume); err != nil {
		return outcome{}, err
	}
	why, err = s.wr.swap(wt, func() error { return s.moveComponent(ctx, t, term, fs, to, size) })
	switch {
	case err != nil:
		return outcome{}, fmt.Errorf("swap in the rebuilt component: %w", err)
	case why != "":
		return outcome{state: "waiting", detail: why}, nil
	}
	if live {
		s.recallLayouts(fs.ino) // the layouts handed out name the old place
	}
	return outcome{state: "done"}, nil
}

// dsCall calls a data server about component comp of the file (stat,
// commit, with no data) and returns the component's size.
func (s *Server) dsCall(ctx context.Context, fs fileSnap, id string, comp int, method string, req rpc.DSReq) (uint64, error) {
	req.ID = rpc.ComponentID{Ino: fs.ino, Gen: fs.l.Generation, Col: uint32(comp)}
	req.Cap = s.rebuildToken(req.ID, id)
	addr := fs.addrs[id]
	if addr == "" {
		return 0, fmt.Errorf("data server %s is not registered", id)
	}
	var resp rpc.DSResp
	cctx, cancel := context.WithTimeout(ctx, rebuildCallTimeout)
	defer cancel()
	if err := s.rb.dsc.Call(cctx, addr, method, &req, &resp); err != nil {
		return 0, fmt.Errorf("%s component %d of inode %d on %s: %w", method, comp, fs.ino, id, err)
	}
	return resp.Size, nil
}

// statComp returns the size of component comp where the layout has it.
func (s *Server) statComp(ctx context.Context, fs fileSnap, comp int) (uint64, error) {
	return s.dsCall(ctx, fs, fs.l.Targets[comp], comp, rpc.DStat, rpc.DSReq{})
}

// fileEnd is the file size implied by data column col holding n bytes.
func fileEnd(l layout.Layout, col int, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	x := int64(n - 1)
	row, in := x/l.Unit, x%l.Unit
	return uint64(row*l.RowSize() + int64(col)*l.Unit + in + 1)
}

// rebuildSize is the size the rebuilt component must have: a copy's size,
// or for rs the component's share of the file's size, the committed size
// or what the surviving data columns imply, whichever is larger. The data
// columns are asked all at once: each answers behind the reads of the
// rebuilds under way on its server, and asked one after the other they
// held up the start of a copy by up to 0.9 s (BenchmarkRebuild with 8
// rebuilds at once on a loaded machine).
func (s *Server) rebuildSize(ctx context.Context, fs fileSnap, comp int, src *sources) (uint64, error) {
	var err error
	for _, c := range src.copies {
		var n uint64
		if n, err = s.statComp(ctx, fs, c); err == nil {
			return n, nil
		}
	}
	if len(src.rs) == 0 {
		return 0, err
	}
	size := fs.size
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range src.rs {
		if c >= fs.l.Width {
			continue
		}
		wg.Go(func() {
			n, err := s.statComp(ctx, fs, c)
			if err != nil {
				return // decoding will find out
			}
			mu.Lock()
			defer mu.Unlock()
			size = max(size, fileEnd(fs.l, c, n))
		})
	}
	wg.Wait()
	return compBytes(fs.l, size, comp), nil
}

// inParallel runs fn(0..n-1), at most limit at once, and returns the first
// error; the others' context is cancelled then.
func inParallel(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, max(limit, 1))
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// collectStrays removes from their data servers up to strayBatch strays
// whose capability lifetime has passed (no reader can hold a layout naming
// them any more) and drops them from the FSM.
func (s *Server) collectStrays(ctx context.Context) {
	now := s.clock()
	views := s.reg.views()
	type job struct {
		k    strayKey
		addr string
		keep bool // the layout uses it again: drop the record only
	}
	var jobs []job
	s.fsm.mu.RLock()
	st := s.fsm.st
	for k, since := range st.rep.strays {
		if now.Before(time.Unix(0, since).Add(s.cfg.CapabilityTTL)) || !views[k.DS].up {
			continue
		}
		n := st.get(k.Ino)
		keep := n != nil && n.isFile() && n.Layout.Generation == k.Gen && int(k.Col) < len(n.Layout.Targets) && n.Layout.Targets[k.Col] == k.DS
		if in, ok := st.rep.rebuilds[compKey{Ino: k.Ino, Comp: k.Col}]; ok && in.Gen == k.Gen && in.To == k.DS {
			keep = true
		}
		jobs = append(jobs, job{k: k, addr: st.ds[k.DS].Addr, keep: keep})
		if len(jobs) == strayBatch {
			break
		}
	}
	s.fsm.mu.RUnlock()
	var purged []strayKey
	for _, j := range jobs {
		if !j.keep {
			cid := rpc.ComponentID{Ino: j.k.Ino, Gen: j.k.Gen, Col: j.k.Col}
			req := rpc.DSReq{Cap: s.rebuildToken(cid, j.k.DS), ID: cid}
			cctx, cancel := context.WithTimeout(ctx, gcCallTimeout)
			err := s.rb.dsc.Call(cctx, j.addr, rpc.DRemove, &req, &rpc.DSResp{})
			cancel()
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				if ctx.Err() == nil {
					s.log.Warn("stray_remove_failed", "inode", j.k.Ino, "gen", j.k.Gen, "col", j.k.Col, "ds_id", j.k.DS, "err", err)
				}
				continue
			}
		}
		purged = append(purged, j.k)
	}
	if len(purged) == 0 {
		return
	}
	if _, err := s.apply(cmdStrayPurge, &strayPurgeCmd{Keys: purged}); err != nil && ctx.Err() == nil {
		s.log.Warn("stray_purge_failed", "strays", len(purged), "err", err)
	}
}
