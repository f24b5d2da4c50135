package mds

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// The GC scan (`strata admin gc`). The orphan queue (gc.go) removes what
// the FSM knows it dropped; the scan finds what it does not know of: a
// component left by a removal that reached no data server before its
// record was lost, one re-created by a capability replayed before the
// data servers kept tombstones, one copied in by hand. The leader lists
// every data server that is up (rpc.DList, one store subdirectory per
// call) and then, under the FSM's lock, keeps what is referenced: the
// component of a current layout on its target, a rebuild's target, a
// displaced copy waiting out its capabilities (strays), a generation in
// the orphan queue (which removes it). The rest is removed (unless it is
// a dry run) and reported. A component of a generation that is gone is
// removed with a tombstone, as the orphan queue does; a stray copy of a
// live generation without one, so that it revokes nothing.
//
// The listing and the check are not atomic, and need not be: a component
// listed before its file was created cannot exist (its writers' capability
// names an inode the FSM had), and one whose reference was dropped
// between the two is garbage either way.

const gcListTimeout = 10 * time.Second

// gcScan serves rpc.MGCScan.
func (s *Server) gcScan(ctx context.Context, r *rpc.GCScanReq) (*rpc.GCReport, error) {
	s.fsm.mu.RLock()
	recs := slices.SortedFunc(maps.Values(s.fsm.st.ds), func(a, b dsRecord) int { return strings.Compare(a.ID, b.ID) })
	s.fsm.mu.RUnlock()
	rep := &rpc.GCReport{DryRun: r.DryRun}
	for _, d := range recs {
		row := rpc.GCDataServer{ID: d.ID, State: "down"}
		if s.reg.up(d.ID) {
			row.State = "scanned"
			if err := s.gcScanDS(ctx, d, &row, rep); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				row.State, row.Err = "failed", err.Error()
			}
		}
		rep.DataSvrs = append(rep.DataSvrs, row)
	}
	s.log.Info("gc_scan", "dry_run", r.DryRun, "found", rep.Found, "found_bytes", rep.FoundBytes, "removed", rep.Removed)
	return rep, nil
}

// gcScanDS scans data server d into row and rep.
func (s *Server) gcScanDS(ctx context.Context, d dsRecord, row *rpc.GCDataServer, rep *rpc.GCReport) error {
	for sub := range uint32(256) {
		var resp rpc.CompListResp
		cctx, cancel := context.WithTimeout(ctx, gcListTimeout)
		err := s.dsc.Call(cctx, d.Addr, rpc.DList, &rpc.CompListReq{Cap: s.adminToken(0, 0, 0, d.ID, 0), Sub: sub}, &resp)
		cancel()
		if err != nil {
			return fmt.Errorf("list %s: %w", d.ID, err)
		}
		type found struct {
			c      rpc.DSComp
			reason string
			gone   bool
		}
		var orphans []found
		s.fsm.mu.RLock()
		for _, c := range resp.Comps {
			row.Components++
			row.Bytes += c.Size
			if reason, gone := s.fsm.st.unreferenced(c.ID, d.ID); reason != "" {
				orphans = append(orphans, found{c, reason, gone})
			}
		}
		s.fsm.mu.RUnlock()
		for _, o := range orphans {
			g := rpc.GCOrphan{DS: d.ID, ID: o.c.ID, Size: o.c.Size, Reason: o.reason}
			rep.Found++
			rep.FoundBytes += o.c.Size
			if !rep.DryRun {
				if err := s.gcRemove(ctx, d, o.c.ID, o.gone); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					g.Err = err.Error()
				} else {
					g.Removed = true
					rep.Removed++
					rep.RemovedBytes += o.c.Size
				}
			}
			if len(rep.Orphans) < rpc.MaxGCOrphans {
				rep.Orphans = append(rep.Orphans, g)
			}
		}
	}
	return nil
}

// gcRemove removes component id from d; a component of a generation that
// is gone leaves a tombstone (gc.go).
func (s *Server) gcRemove(ctx context.Context, d dsRecord, id rpc.ComponentID, gone bool) error {
	req := &rpc.DSReq{Cap: s.adminToken(id.Ino, id.Gen, id.Col, d.ID, 0), ID: id}
	if gone {
		req.Tombstone = s.clock().Add(2 * s.cfg.CapabilityTTL).UnixNano()
	}
	cctx, cancel := context.WithTimeout(ctx, gcCallTimeout)
	defer cancel()
	if err := s.dsc.Call(cctx, d.Addr, rpc.DRemove, req, &rpc.DSResp{}); err != nil && !errors.Is(err, syscall.ENOENT) {
		return err
	}
	return nil
}

// unreferenced says why component id on data server ds is garbage, or ""
// if something references it; gone reports that its generation is gone
// (the inode, or the generation). The caller holds fsm.mu.
func (st *state) unreferenced(id rpc.ComponentID, ds string) (reason string, gone bool) {
	if _, queued := st.orphans[orphanKey{Ino: id.Ino, Gen: id.Gen}]; queued {
		return "", false // the orphan queue removes it
	}
	n := st.get(id.Ino)
	switch {
	case n == nil:
		return "no such inode", true
	case !n.isFile():
		return "the inode is not a regular file", true
	case id.Gen != n.Layout.Generation:
		return fmt.Sprintf("generation %d is gone (the file is at %d)", id.Gen, n.Layout.Generation), true
	case int(id.Col) >= len(n.Layout.Targets):
		return fmt.Sprintf("the layout has no component %d", id.Col), true
	case n.Layout.Targets[id.Col] == ds:
		return "", false
	}
	if in, ok := st.rep.rebuilds[compKey{Ino: id.Ino, Comp: id.Col}]; ok && in.To == ds {
		return "", false // a rebuild's target
	}
	if _, ok := st.rep.strays[strayKey{Ino: id.Ino, Gen: id.Gen, Col: id.Col, DS: ds}]; ok {
		return "", false // removed once its capabilities expired
	}
	return fmt.Sprintf("component %d of the file is on %s", id.Col, n.Layout.Targets[id.Col]), false
}
