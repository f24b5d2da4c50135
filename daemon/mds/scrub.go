package mds

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/layout"
)

// Scrub coordination. Every data server scrubs its components in the
// background on its own schedule (daemon/ds scrub.go); `strata admin scrub
// start` has the leader start a pass on every data server that is up now
// (rpc.DScrubStart), and a client that read a block failing its checksum
// (LAYOUTERROR of a read, stale.go) has the leader ask that data server to
// check that component at once. A data server reports each component in
// which it found such blocks (rpc.MScrubReport):
//
//   - a component the layouts do not use (an orphan or stray waiting to be
//     collected) is ignored;
//   - otherwise the blocks are recorded (damagedCmd). For a mirror or rs
//     file the rebuild manager repairs them in place from the other
//     components (rebuild_blocks.go) and drops the record; `strata admin
//     scrub status` lists them as being repaired.
//   - a file without redundancy has nothing to repair them from: the
//     record stays, `strata admin scrub status` lists it as unrecoverable
//     and strata_mds_unrecoverable_blocks counts its blocks. Reads of those
//     blocks keep failing with EIO; the record goes when a later pass finds
//     the component clean (the blocks were rewritten) or the file goes.

// scrubCallTimeout bounds one scrub start or status call to a data server.
const scrubCallTimeout = 5 * time.Second

// scrubStart serves rpc.MScrubStart.
func (s *Server) scrubStart(ctx context.Context, _ *rpc.Empty) (*rpc.ScrubStatusResp, error) {
	return s.scrubFanout(ctx, rpc.DScrubStart)
}

// scrubStatus serves rpc.MScrubStatus.
func (s *Server) scrubStatus(ctx context.Context, _ *rpc.Empty) (*rpc.ScrubStatusResp, error) {
	return s.scrubFanout(ctx, rpc.DScrubStatus)
}

// scrubFanout calls method on every registered data server that is up and
// gathers their answers with the lost records.
func (s *Server) scrubFanout(ctx context.Context, method string) (*rpc.ScrubStatusResp, error) {
	views := s.reg.views()
	s.fsm.mu.RLock()
	recs := slices.SortedFunc(maps.Values(s.fsm.st.ds), func(a, b dsRecord) int { return strings.Compare(a.ID, b.ID) })
	damaged := slices.Collect(maps.Values(s.fsm.st.rep.damaged))
	schemes := make([]layout.Layout, len(damaged))
	for i, d := range damaged {
		if n := s.fsm.st.get(d.Ino); n != nil && n.isFile() {
			schemes[i] = n.Layout
		}
	}
	s.fsm.mu.RUnlock()
	resp := &rpc.ScrubStatusResp{DataSvrs: make([]rpc.DSScrubStatus, len(recs))}
	var wg sync.WaitGroup
	for i, d := range recs {
		resp.DataSvrs[i] = rpc.DSScrubStatus{ID: d.ID, State: "down"}
		if !views[d.ID].up {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, scrubCallTimeout)
			defer cancel()
			var st rpc.DSScrubStatus
			var err error
			if method == rpc.DScrubStart {
				err = s.dsc.Call(cctx, d.Addr, method, &rpc.ScrubStartReq{Cap: s.scrubToken()}, &st)
			} else {
				err = s.dsc.Call(cctx, d.Addr, method, &rpc.Empty{}, &st)
			}
			if err != nil {
				s.log.Warn("scrub_call_failed", "ds_id", d.ID, "method", method, "err", err)
				return
			}
			st.ID = d.ID
			resp.DataSvrs[i] = st
		}()
	}
	wg.Wait()
	want := map[uint64]bool{}
	for _, d := range damaged {
		want[d.Ino] = true
	}
	paths := s.pathsOf(want)
	blocked := s.rb.blockedRepairs()
	for i, d := range damaged {
		b := rpc.DamagedBlocks{Ino: d.Ino, Gen: d.Gen, Col: d.Col, DS: d.DS, Blocks: d.Blocks, BlockSize: d.BlockSize, Found: d.Found, Path: paths[d.Ino], Layout: schemes[i].String()}
		if schemes[i].Scheme.Kind == layout.KindNone || blocked[compKey{Ino: d.Ino, Comp: d.Col}] {
			resp.Unrecoverable = append(resp.Unrecoverable, b)
		} else {
			resp.Repairing = append(resp.Repairing, b)
		}
	}
	byKey := func(a, b rpc.DamagedBlocks) int { return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Col, b.Col)) }
	slices.SortFunc(resp.Unrecoverable, byKey)
	slices.SortFunc(resp.Repairing, byKey)
	return resp, nil
}

// scrubToken is the capability the MDS starts a data server's scrub with.
func (s *Server) scrubToken() capability.Token {
	t := capability.Token{Ops: capability.OpAdmin, Class: rpc.ClassScrub, Expiry: s.clock().Add(adminTokenTTL).UnixNano()}
	t.Sign(s.cfg.Secret)
	return t
}

// scrubReport serves rpc.MScrubReport: see the top of this file.
func (s *Server) scrubReport(_ context.Context, r *rpc.ScrubReportReq) (*rpc.Empty, error) {
	if err := r.Cap.Verify(s.cfg.Secret, s.clock(), 0, 0, capability.OpAdmin); err != nil {
		return nil, errf(syscall.EACCES, "scrub report from %s: %v", r.DS, err)
	}
	s.fsm.mu.RLock()
	n := s.fsm.st.get(r.ID.Ino)
	used := n != nil && n.isFile() && n.Layout.Generation == r.ID.Gen && int(r.ID.Col) < len(n.Layout.Targets) && n.Layout.Targets[r.ID.Col] == r.DS
	var kind layout.Kind
	if used {
		kind = n.Layout.Scheme.Kind
	}
	_, known := s.fsm.st.rep.damaged[damagedKey{Ino: r.ID.Ino, Gen: r.ID.Gen, Col: r.ID.Col}]
	s.fsm.mu.RUnlock()
	rec := damagedRecord{Ino: r.ID.Ino, Gen: r.ID.Gen, Col: r.ID.Col, DS: r.DS, Blocks: r.Blocks, BlockSize: r.BlockSize, Found: s.now()}
	switch {
	case r.Clean:
		if known {
			if _, err := s.apply(cmdDamaged, &damagedCmd{Rec: rec, Clear: true}); err != nil {
				return nil, err
			}
		}
		return &rpc.Empty{}, nil
	case !used || len(r.Blocks) == 0:
		return &rpc.Empty{}, nil // not in any layout: the GC removes it
	case r.BlockSize == 0:
		return nil, errf(syscall.EINVAL, "scrub report from %s names blocks without a block size", r.DS)
	}
	s.rmet.scrubBad.Add(uint64(len(r.Blocks)))
	if _, err := s.apply(cmdDamaged, &damagedCmd{Rec: rec}); err != nil {
		return nil, err
	}
	if kind == layout.KindNone {
		s.log.Error("scrub_unrecoverable", "inode", r.ID.Ino, "gen", r.ID.Gen, "col", r.ID.Col, "ds_id", r.DS, "blocks", r.Blocks)
	} else {
		s.log.Warn("scrub_damaged", "inode", r.ID.Ino, "gen", r.ID.Gen, "col", r.ID.Col, "ds_id", r.DS, "blocks", r.Blocks)
		s.rb.kickNow()
	}
	return &rpc.Empty{}, nil
}

// checkComponents asks the data servers of the given components to scrub
// them now (a client read a corrupt block in each).
func (s *Server) checkComponents(ctx context.Context, ino, gen uint64, comps []uint32, ds []string) {
	s.fsm.mu.RLock()
	addrs := make([]string, len(ds))
	for i, id := range ds {
		addrs[i] = s.fsm.st.ds[id].Addr
	}
	s.fsm.mu.RUnlock()
	for i, c := range comps {
		cctx, cancel := context.WithTimeout(ctx, scrubCallTimeout)
		req := &rpc.ScrubStartReq{Cap: s.scrubToken(), Comps: []rpc.ComponentID{{Ino: ino, Gen: gen, Col: c}}}
		err := s.dsc.Call(cctx, addrs[i], rpc.DScrubStart, req, &rpc.DSScrubStatus{})
		cancel()
		if err != nil {
			s.log.Warn("scrub_check_failed", "inode", ino, "col", c, "ds_id", ds[i], "err", err)
		}
	}
}

// registerRepair serves the failure-handling methods on m.
func (s *Server) registerRepair(m *rpc.Mux) {
	handle(s, m, rpc.MLayoutError, s.layoutError)
	handle(s, m, rpc.MScrubReport, s.scrubReport)
	handle(s, m, rpc.MScrubStart, s.scrubStart)
	handle(s, m, rpc.MScrubStatus, s.scrubStatus)
	handle(s, m, rpc.MRebuildStatus, s.rebuildStatus)
	handle(s, m, rpc.MDSDrain, s.dsDrain)
	handle(s, m, rpc.MDSList, s.dsList)
	handle(s, m, rpc.MGCScan, s.gcScan)
}
