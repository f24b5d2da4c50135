package ds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/qos"
)

// The scrubber reads every component in the store block by block and
// verifies each block against its stored CRC32C, in the background: a
// pass starts every Config.ScrubInterval (the first one interval after
// start) and when the MDS asks (rpc.DScrubStart, `strata admin scrub
// start`); a request during a pass is remembered and starts another pass
// after it. The MDS may also ask for a check of given components only (a
// client read a corrupt block in them): those are checked before the next
// pass. It reads at most Config.ScrubRate bytes a second, a chunk of
// scrubChunk bytes at a time under the component's shared range lock, so
// a write waits for at most one chunk. Its reads are not counted in the
// load the heartbeat reports.
//
// Each component with blocks failing their checksum is reported to the MDS
// (rpc.MScrubReport), which has it repaired from redundancy or records it
// as lost (daemon/mds scrub.go). A component reported bad that a later
// pass finds clean (it was rewritten) is reported clean. Reads of a bad
// block fail with EIO whether or not scrub has found it.

// scrubChunk is the most bytes the scrubber reads under one lock.
const scrubChunk = 1 << 20

// scrubber is the scrub loop's state. Its counters are guarded by mu.
type scrubber struct {
	s      *Server
	bucket *qos.Bucket
	start  chan struct{} // buffered 1: a pass or a check was asked for

	mu        sync.Mutex
	full      bool                     // a pass was asked for
	check     map[rpc.ComponentID]bool // components to check before it
	running   bool
	passes    uint64
	comps     uint64
	bytes     uint64
	badBlocks uint64
	passStart time.Time
	passEnd   time.Time
	bad       map[rpc.ComponentID]bool // reported bad, not yet clean
}

func newScrubber(s *Server) *scrubber {
	rate := s.cfg.ScrubRate
	if rate < 0 {
		rate = 0 // unlimited
	}
	return &scrubber{
		s:      s,
		bucket: qos.NewBucket(rate, max(rate/4, scrubChunk), s.clock),
		start:  make(chan struct{}, 1),
		bad:    map[rpc.ComponentID]bool{},
	}
}

// ask starts a pass now, or after the one running; with ids, a check of
// those components only.
func (sc *scrubber) ask(ids []rpc.ComponentID) {
	sc.mu.Lock()
	if len(ids) == 0 {
		sc.full = true
	}
	for _, id := range ids {
		if sc.check == nil {
			sc.check = map[rpc.ComponentID]bool{}
		}
		sc.check[id] = true
	}
	sc.mu.Unlock()
	select {
	case sc.start <- struct{}{}:
	default:
	}
}

// loop runs passes until ctx ends.
func (sc *scrubber) loop(ctx context.Context) {
	var tick <-chan time.Time
	if iv := sc.s.cfg.ScrubInterval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sc.start:
		case <-tick:
			sc.mu.Lock()
			sc.full = true
			sc.mu.Unlock()
		}
		sc.mu.Lock()
		check := sc.check
		full := sc.full
		sc.check, sc.full = nil, false
		sc.mu.Unlock()
		for id := range check {
			sc.one(ctx, id)
		}
		if full {
			sc.pass(ctx)
		}
	}
}

// pass scrubs every component once.
func (sc *scrubber) pass(ctx context.Context) {
	s := sc.s
	sc.mu.Lock()
	sc.running, sc.comps, sc.bytes, sc.passStart = true, 0, 0, s.clock()
	sc.mu.Unlock()
	defer func() {
		sc.mu.Lock()
		sc.running = false
		sc.mu.Unlock()
	}()
	ids, err := s.store.list()
	if err != nil {
		s.log.Error("scrub_list_failed", "err", err)
		return
	}
	s.log.Info("scrub_pass_started", "components", len(ids))
	found := 0
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if sc.one(ctx, id) {
			found++
		}
	}
	sc.mu.Lock()
	sc.passes++
	sc.passEnd = s.clock()
	comps, bytes := sc.comps, sc.bytes
	sc.mu.Unlock()
	s.log.Info("scrub_pass_done", "components", comps, "bytes", bytes, "bad_components", found)
}

// one scrubs component id, counts it in the pass and reports what it
// found; it reports whether the component has bad blocks.
func (sc *scrubber) one(ctx context.Context, id rpc.ComponentID) bool {
	s := sc.s
	bad, n, err := s.store.scrub(ctx, id, sc.bucket)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("scrub_component_failed", "inode", id.Ino, "gen", id.Gen, "col", id.Col, "err", err)
		}
		return false
	}
	sc.mu.Lock()
	sc.comps++
	sc.bytes += n
	sc.badBlocks += uint64(len(bad))
	was := sc.bad[id]
	sc.mu.Unlock()
	switch {
	case len(bad) > 0:
		s.log.Error("scrub_bad_blocks", "inode", id.Ino, "gen", id.Gen, "col", id.Col, "blocks", bad)
		if sc.report(ctx, &rpc.ScrubReportReq{ID: id, Blocks: bad, BlockSize: uint32(s.cfg.BlockSize)}) {
			sc.setBad(id, true)
		}
	case was:
		if sc.report(ctx, &rpc.ScrubReportReq{ID: id, Clean: true}) {
			sc.setBad(id, false)
		}
	}
	return len(bad) > 0
}

func (sc *scrubber) setBad(id rpc.ComponentID, bad bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if bad {
		sc.bad[id] = true
	} else {
		delete(sc.bad, id)
	}
}

// report sends a scrub report to the MDS, trying each address (a follower
// redirects); it reports whether one took it.
func (sc *scrubber) report(ctx context.Context, r *rpc.ScrubReportReq) bool {
	s := sc.s
	if s.cfg.MDS == "" {
		return false
	}
	r.DS = s.cfg.ID
	r.Cap = capability.Token{Ops: capability.OpAdmin, Class: rpc.ClassScrub, Expiry: s.clock().Add(time.Minute).UnixNano()}
	r.Cap.Sign(s.secret)
	addrs := strings.Split(s.cfg.MDS, ",")
	var err error
	for attempt := 0; attempt < 3*len(addrs); attempt++ {
		addr := strings.TrimSpace(addrs[attempt%len(addrs)])
		err = s.hb.Call(ctx, addr, rpc.MScrubReport, r, &rpc.Empty{})
		if err == nil {
			return true
		}
		var re *rpc.Error
		if errors.As(err, &re) && re.Redirect != "" {
			if err = s.hb.Call(ctx, re.Redirect, rpc.MScrubReport, r, &rpc.Empty{}); err == nil {
				return true
			}
		}
		if ctx.Err() != nil {
			return false
		}
	}
	s.log.Warn("scrub_report_failed", "inode", r.ID.Ino, "gen", r.ID.Gen, "col", r.ID.Col, "err", err)
	return false
}

// status returns the scrubber's progress.
func (sc *scrubber) status() *rpc.DSScrubStatus {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	st := &rpc.DSScrubStatus{
		ID: sc.s.cfg.ID, State: "idle", Passes: sc.passes, Components: sc.comps,
		Bytes: sc.bytes, BadBlocks: sc.badBlocks, Rate: uint64(max(sc.bucket.Rate(), 0)),
	}
	if sc.running {
		st.State = "running"
	}
	if !sc.passStart.IsZero() {
		st.PassStart = sc.passStart.UnixNano()
	}
	if !sc.passEnd.IsZero() {
		st.PassEnd = sc.passEnd.UnixNano()
	}
	return st
}

// registerScrub serves the scrub methods on mux.
func (s *Server) registerScrub(mux *rpc.Mux) {
	rpc.Handle(mux, rpc.DScrubStart, s.handleScrubStart)
	rpc.Handle(mux, rpc.DScrubStatus, s.handleScrubStatus)
}

// handleScrubStart starts a pass; it needs an admin capability.
func (s *Server) handleScrubStart(_ context.Context, req *rpc.ScrubStartReq) (*rpc.DSScrubStatus, error) {
	if err := req.Cap.Verify(s.secret, s.clock(), 0, 0, capability.OpAdmin); err != nil {
		return nil, rpc.Errorf(syscall.EACCES, "ds: scrub start: "+err.Error())
	}
	s.scrub.ask(req.Comps)
	st := s.scrub.status()
	st.State = "running"
	return st, nil
}

// handleScrubStatus needs no token: it reveals counts only.
func (s *Server) handleScrubStatus(_ context.Context, _ *rpc.Empty) (*rpc.DSScrubStatus, error) {
	return s.scrub.status(), nil
}

// list returns the components in the store in (inode, generation,
// column) order.
func (st *store) list() ([]rpc.ComponentID, error) {
	subs, err := st.disk.ReadDir(st.dir)
	if err != nil {
		return nil, fmt.Errorf("list store: %w", err)
	}
	var out []rpc.ComponentID
	for _, sub := range subs {
		if !sub.IsDir() || len(sub.Name()) != 2 {
			continue
		}
		files, err := st.disk.ReadDir(filepath.Join(st.dir, sub.Name()))
		if err != nil {
			return nil, fmt.Errorf("list store: %w", err)
		}
		for _, f := range files {
			if id, ok := parseComponentName(f.Name()); ok && f.Type().IsRegular() {
				out = append(out, id)
			}
		}
	}
	slices.SortFunc(out, func(a, b rpc.ComponentID) int {
		return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Gen, b.Gen), cmp.Compare(a.Col, b.Col))
	})
	return out, nil
}

// parseComponentName parses a data file's name, <ino>.<gen>.<col>.
func parseComponentName(name string) (rpc.ComponentID, bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 {
		return rpc.ComponentID{}, false
	}
	ino, err1 := strconv.ParseUint(parts[0], 10, 64)
	gen, err2 := strconv.ParseUint(parts[1], 10, 64)
	col, err3 := strconv.ParseUint(parts[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return rpc.ComponentID{}, false
	}
	return rpc.ComponentID{Ino: ino, Gen: gen, Col: uint32(col)}, true
}

// scrub verifies every block of component id, scrubChunk bytes at a time
// under the shared range lock, paced by bucket. It returns the blocks
// failing their checksum and the bytes read; a component removed
// meanwhile has none.
func (st *store) scrub(ctx context.Context, id rpc.ComponentID, bucket *qos.Bucket) (bad []uint64, read uint64, err error) {
	e, err := st.acquire(id, false)
	if e == nil || err != nil {
		return nil, 0, err
	}
	defer st.release(e)
	per := max(uint64(scrubChunk)>>st.shift, 1) // blocks per chunk
	buf := make([]byte, per<<st.shift)
	sums := make([]byte, per*sumSize)
	for b0 := uint64(0); ; b0 += per {
		if err := ctx.Err(); err != nil {
			return bad, read, err
		}
		size := e.getSize()
		if b0<<st.shift >= size {
			return bad, read, nil
		}
		b1 := min(b0+per, (size+st.bs-1)>>st.shift) - 1
		n := min(size, (b1+1)<<st.shift) - b0<<st.shift
		if err := bucket.Wait(ctx, int64(n)); err != nil {
			return bad, read, err
		}
		e.ranges.lock(b0, b1, false)
		size = e.getSize()
		end := min(size, (b1+1)<<st.shift)
		var rerr error
		if end > b0<<st.shift {
			rerr = readFull(e.crc, sums[:(b1-b0+1)*sumSize], int64(b0*sumSize))
			if rerr == nil {
				rerr = readFull(e.data, buf[:end-b0<<st.shift], int64(b0<<st.shift))
			}
		}
		e.ranges.unlock(b0, b1, false)
		if rerr != nil {
			return bad, read, fmt.Errorf("scrub %s: %w", componentName(id), rerr)
		}
		for b := b0; b <= b1 && b<<st.shift < end; b++ {
			lo := (b - b0) << st.shift
			hi := min(lo+st.bs, end-b0<<st.shift)
			if _, ok := st.sum.verify(buf[lo:hi], getSum(sums, int(b-b0))); !ok {
				bad = append(bad, b)
			}
		}
		read += end - b0<<st.shift
	}
}
