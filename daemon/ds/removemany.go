package ds

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// handleRemoveMany serves rpc.DRemoveMany: the MDS's orphan collection
// removes the components a round's orphans have here in one call. Each
// item is what a DRemove of its own does, in the same order (its admin
// capability checked, its tombstone made durable before its component
// goes, then the component removed) and is answered on its own; the
// tombstones of all items are written together and share one sync, and
// a call costs one request, not one per component.
func (s *Server) handleRemoveMany(ctx context.Context, req *rpc.RemoveManyReq) (*rpc.RemoveManyResp, error) {
	if len(req.Items) > rpc.MaxRemoveMany {
		return nil, rpc.Errorf(syscall.EINVAL, fmt.Sprintf("ds: remove of %d components in one call: at most %d", len(req.Items), rpc.MaxRemoveMany))
	}
	resp := &rpc.RemoveManyResp{Errnos: make([]uint32, len(req.Items)), Msgs: make([]string, len(req.Items))}
	fail := func(i int, err error) {
		resp.Errnos[i], resp.Msgs[i] = uint32(rpc.ToErrno(err)), err.Error()
	}
	var first time.Time
	var tombs []tomb
	for i := range req.Items {
		it := &req.Items[i]
		start, err := s.begin(ctx, it, capability.OpAdmin)
		if err != nil {
			fail(i, err)
			continue
		}
		if first.IsZero() {
			first = start
		}
		if it.Tombstone > 0 {
			tombs = append(tombs, tomb{tombKey{it.ID.Ino, it.ID.Gen}, it.Tombstone})
		}
	}
	defer s.end(first)
	if err := s.store.tombs.addMany(tombs, s.clock().UnixNano()); err != nil {
		// No component whose tombstone may be missing goes.
		for i, it := range req.Items {
			if resp.Errnos[i] == 0 && it.Tombstone > 0 {
				fail(i, wireError(err))
			}
		}
	}
	for i, it := range req.Items {
		if resp.Errnos[i] != 0 {
			continue
		}
		if err := s.store.remove(it.ID); err != nil {
			fail(i, wireError(err))
		}
	}
	return resp, nil
}
