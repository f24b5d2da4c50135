package mds

import (
	"context"
	"errors"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// createMany serves MCreateMany: every item is checked as a create of its
// own (name, permissions, placement, quota precheck: a refused item costs
// no log space), then all accepted items are proposed together, so that
// the group commit carries them in as few raft entries as fit
// (proposer.go). Each item answers only once its entry is applied, so a
// created file is durable in raft when the reply says so. The metrics
// count each item as a create (op "create"; op "createmany" counts the
// calls).
func (s *Server) createMany(ctx context.Context, r *rpc.CreateManyReq) (*rpc.CreateManyResp, error) {
	if len(r.Items) > rpc.MaxCreateMany {
		return nil, errf(syscall.EINVAL, "create: %d files in one call, more than %d", len(r.Items), rpc.MaxCreateMany)
	}
	out := &rpc.CreateManyResp{Items: make([]rpc.CreateManyItem, len(r.Items))}
	prepared := make([]*createCmd, len(r.Items))
	for i := range r.Items {
		cmd, open, err := s.prepareCreate(ctx, &r.Items[i])
		if err == nil && cmd != nil {
			err = validateCommand(cmd)
		}
		if err != nil || open != nil {
			out.Items[i] = rpc.CreateManyResult(open, err)
			continue
		}
		prepared[i] = cmd
	}
	s.batchQuota(prepared, out.Items)
	cmds := make([][]byte, 0, len(r.Items))
	at := make([]int, 0, len(r.Items)) // item index of each command
	for i, cmd := range prepared {
		if cmd != nil {
			cmds = append(cmds, encodeCommand(cmdCreate, cmd))
			at = append(at, i)
		}
	}
	res := make([]result, len(cmds))
	errs := make([]error, len(cmds))
	s.prop.applyMany(cmds, res, errs)
	for j, i := range at {
		var re *rpc.Error
		if errors.As(errs[j], &re) && re.NotLeader {
			// Leadership moved: the whole call fails over, as a single
			// create does (an item that was applied answers EEXIST to an
			// exclusive retry, as a retried NFS create does).
			return nil, errs[j]
		}
		out.Items[i] = rpc.CreateManyResult(&rpc.CreateResp{Attr: res[j].attr, Created: res[j].created}, errs[j])
	}
	failed := 0
	for _, it := range out.Items {
		if it.Errno != 0 {
			failed++
		}
	}
	s.countItems("create", len(out.Items), failed)
	return out, nil
}

// batchQuota is the quota precheck of a call's creates (the FSM checks
// again and decides): each new file counts against its owner's and its
// project's inode limits on top of the call's earlier ones, so that a
// call that would go past a limit has its excess refused before the log.
// A refused create's command is dropped from cmds and its item answered.
func (s *Server) batchQuota(cmds []*createCmd, items []rpc.CreateManyItem) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	st := s.fsm.st
	if len(st.quotas) == 0 {
		return
	}
	pending := map[quotaKey]uint64{}
	type entry struct {
		parent uint64
		name   string
	}
	seen := map[entry]bool{}
	for i, c := range cmds {
		if c == nil {
			continue
		}
		e := entry{c.Parent, c.Name}
		if d := st.inodes[c.Parent]; seen[e] || d != nil && d.isDir() && d.Entries[c.Name] != 0 {
			continue // refused by the FSM, or an open: no new inode
		}
		seen[e] = true
		if err := st.batchInodeRoom(pending, c.Uid, st.projectOf(c.Parent)); err != nil {
			cmds[i] = nil
			items[i] = rpc.CreateManyResult(nil, err)
		}
	}
}
