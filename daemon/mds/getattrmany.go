package mds

import (
	"context"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// getattrMany serves MGetattrMany: the attributes of each inode, read
// under one hold of the FSM's read lock, as MGetattr reads them (a stale
// read is allowed, see handlers.go). The metrics count each inode as a
// getattr (op "getattr"; op "getattrmany" counts the calls).
func (s *Server) getattrMany(_ context.Context, r *rpc.GetattrManyReq) (*rpc.GetattrManyResp, error) {
	if len(r.Inos) > rpc.MaxGetattrMany {
		return nil, errf(syscall.EINVAL, "getattr: %d inodes in one call, more than %d", len(r.Inos), rpc.MaxGetattrMany)
	}
	out := &rpc.GetattrManyResp{Items: make([]rpc.AttrItem, len(r.Inos))}
	failed := 0
	s.fsm.mu.RLock()
	for i, ino := range r.Inos {
		n, err := s.fsm.st.node(ino)
		if err != nil {
			out.Items[i] = rpc.AttrResult(nil, err)
			failed++
			continue
		}
		out.Items[i].Attr = n.attr()
	}
	s.fsm.mu.RUnlock()
	s.countItems("getattr", len(r.Inos), failed)
	return out, nil
}

// countItems counts n operations of op, failed of them failed, served
// as the items of a batch call.
func (s *Server) countItems(op string, n, failed int) {
	if c := s.met.named(op); c != nil {
		c.total.Add(uint64(n))
		c.errors.Add(uint64(failed))
	}
}
