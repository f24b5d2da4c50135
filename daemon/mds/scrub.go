package mds

import (
	"context"
	"errors"
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
// (rpc.DScrubStart). A data server reports each component in which it
// found blocks failing their checksum (rpc.MScrubReport):
//
//   - a component the layouts do not use (an orphan or stray waiting to be
//     collected) is ignored;
//   - a component of a mirror or rs file is marked stale (reason "scrub"),
//     and the rebuild manager rewrites it in place from the other
//     components, which replaces the corrupt blocks;
//   - a component of a file without redundancy, or one whose file has lost
//     all the redundancy it had, is recorded as lost (lostCmd): `strata
//     admin scrub status` lists it and strata_mds_unrecoverable_blocks
//     counts its blocks. Reads of those blocks keep failing with EIO; the
//     record goes when a later pass finds the component clean (the blocks
//     were rewritten) or the file goes.

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
	lost := slices.Collect(maps.Values(s.fsm.st.rep.lost))
	var repairing uint32
	for _, e := range s.fsm.st.rep.stale {
		for _, c := range e.Comps {
			if c.Reason == "scrub" {
				repairing++
			}
		}
	}
	s.fsm.mu.RUnlock()
	resp := &rpc.ScrubStatusResp{DataSvrs: make([]rpc.DSScrubStatus, len(recs)), Repairing: repairing}
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
	slices.SortFunc(lost, func(a, b lostRecord) int {
		if a.Ino != b.Ino {
			return int(a.Ino - b.Ino)
		}
		return int(a.Col) - int(b.Col)
	})
	want := map[uint64]bool{}
	for _, l := range lost {
		want[l.Ino] = true
	}
	paths := s.pathsOf(want)
	for _, l := range lost {
		resp.Unrecoverable = append(resp.Unrecoverable, rpc.LostBlocks{Ino: l.Ino, Gen: l.Gen, Col: l.Col, DS: l.DS, Blocks: l.Blocks, Found: l.Found, Path: paths[l.Ino]})
	}
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
	var l layout.Layout
	used := n != nil && n.isFile() && n.Layout.Generation == r.ID.Gen && int(r.ID.Col) < len(n.Layout.Targets) && n.Layout.Targets[r.ID.Col] == r.DS
	if used {
		l = n.Layout
	}
	_, known := s.fsm.st.rep.lost[lostKey{Ino: r.ID.Ino, Gen: r.ID.Gen, Col: r.ID.Col}]
	s.fsm.mu.RUnlock()
	rec := lostRecord{Ino: r.ID.Ino, Gen: r.ID.Gen, Col: r.ID.Col, DS: r.DS, Blocks: r.Blocks, Found: s.now()}
	switch {
	case r.Clean:
		if known {
			if _, err := s.apply(cmdLost, &lostCmd{Rec: rec, Clear: true}); err != nil {
				return nil, err
			}
		}
		return &rpc.Empty{}, nil
	case !used:
		return &rpc.Empty{}, nil // not in any layout: the GC removes it
	}
	s.rmet.scrubBad.Add(uint64(len(r.Blocks)))
	if l.Scheme.Kind != layout.KindNone {
		_, err := s.apply(cmdStale, &staleCmd{Ino: r.ID.Ino, Gen: r.ID.Gen, Comps: []uint32{r.ID.Col}, DS: []string{r.DS}, Reason: "scrub", Strict: true})
		if err == nil {
			s.log.Warn("scrub_marked_stale", "inode", r.ID.Ino, "gen", r.ID.Gen, "col", r.ID.Col, "ds_id", r.DS, "blocks", len(r.Blocks))
			s.rb.kickNow()
			return &rpc.Empty{}, nil
		}
		var re *rpc.Error
		if !errors.As(err, &re) || re.ErrnoValue() != syscall.EIO {
			return nil, err
		}
		// Marking it would leave the file unreadable: nothing to repair from.
	}
	if _, err := s.apply(cmdLost, &lostCmd{Rec: rec}); err != nil {
		return nil, err
	}
	s.log.Error("scrub_unrecoverable", "inode", r.ID.Ino, "gen", r.ID.Gen, "col", r.ID.Col, "ds_id", r.DS, "blocks", r.Blocks)
	return &rpc.Empty{}, nil
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
}
