package mds

import (
	"context"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Missing components. Writers keep every component at least its share of
// the published file size (layout.ComponentSize; client/missing.go), so a
// component that is shorter lost bytes: it was removed or cut behind the
// MDS's back, or its data server lost it. A reader that finds one reports
// it with a LAYOUTERROR read fault of errno ENODATA. The MDS does not take
// the client's word for it: it asks the component's data server for the
// size and marks the component stale (reason "missing") only if it is
// short of the file's current size, so that the rebuild manager recreates
// it from redundancy. A file without redundancy has nothing to rebuild
// from: its reads fail with EIO until the data is restored.

// errnoShort is the LAYOUTERROR errno of a short component.
const errnoShort = syscall.ENODATA

// missingCallTimeout bounds one DStat of the check.
const missingCallTimeout = scrubCallTimeout

// markMissing checks the components of file ino (generation gen) that a
// reader found short and marks those that are stale.
func (s *Server) markMissing(ctx context.Context, ino, gen uint64, comps []uint32) {
	s.fsm.mu.RLock()
	n, err := s.fsm.st.node(ino)
	if err != nil || !n.isFile() || n.Layout.Generation != gen || n.Layout.Scheme.Kind == layout.KindNone {
		s.fsm.mu.RUnlock()
		return
	}
	lay, size, stale := n.Layout, int64(n.Size), s.fsm.st.staleOf(n).set()
	addrs := make(map[uint32]string, len(comps))
	for _, c := range comps {
		if int(c) < len(lay.Targets) && !stale[c] {
			addrs[c] = s.fsm.st.ds[lay.Targets[c]].Addr
		}
	}
	s.fsm.mu.RUnlock()

	var short []uint32
	var ds []string
	for c, addr := range addrs {
		need := lay.ComponentSize(size, int(c))
		if need == 0 || addr == "" {
			continue
		}
		req := &rpc.DSReq{Cap: s.adminToken(ino, gen, c, lay.Targets[c], 0), ID: rpc.ComponentID{Ino: ino, Gen: gen, Col: c}}
		var resp rpc.DSResp
		cctx, cancel := context.WithTimeout(ctx, missingCallTimeout)
		err := s.dsc.Call(cctx, addr, rpc.DStat, req, &resp)
		cancel()
		if err != nil {
			continue // an unreachable server is the heartbeats' business
		}
		if int64(resp.Size) < need {
			short, ds = append(short, c), append(ds, lay.Targets[c])
		}
	}
	if len(short) == 0 {
		return
	}
	if _, err := s.apply(cmdStale, &staleCmd{Ino: ino, Gen: gen, Comps: short, DS: ds, Reason: "missing", Strict: true}); err != nil {
		s.log.Warn("missing_components_not_marked", "inode", ino, "gen", gen, "comps", short, "err", err)
		return
	}
	s.rmet.stale.Add(uint64(len(short)))
	s.log.Warn("components_marked_stale", "inode", ino, "gen", gen, "comps", short, "ds_ids", ds, "op", "missing")
	s.rb.kickNow()
}
