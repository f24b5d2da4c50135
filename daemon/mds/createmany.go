package mds

import (
	"context"
	"errors"
	"syscall"

	"github.com/strata-hpc/strata/daemon/mds/posix"
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
	all := make([]createCmd, len(r.Items))
	prepared := make([]*createCmd, len(r.Items)) // nil: answered already
	var who creatorMemo
	for i := range r.Items {
		open, err := s.prepareCreate(ctx, &r.Items[i], &who, &all[i])
		if err == nil && open == nil {
			err = validateCommand(&all[i])
		}
		if err != nil || open != nil {
			out.Items[i] = rpc.CreateManyResult(open, err)
			continue
		}
		prepared[i] = &all[i]
	}
	s.batchQuota(prepared, out.Items)
	cmds, at := encodeCreates(prepared)
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

// encodeCreates encodes the commands of cmds that are not nil, in one
// allocation, and returns each one's log entry with its index in cmds.
func encodeCreates(cmds []*createCmd) (entries [][]byte, at []int) {
	size, n := 0, 0
	for _, c := range cmds {
		if c != nil {
			size += 1 + createSize(c)
			n++
		}
	}
	buf := make([]byte, 0, size)
	entries, at = make([][]byte, 0, n), make([]int, 0, n)
	for i, c := range cmds {
		if c == nil {
			continue
		}
		start := len(buf)
		buf = appendCreate(append(buf, byte(cmdCreate)), c)
		entries = append(entries, buf[start:len(buf):len(buf)])
		at = append(at, i)
	}
	return entries, at
}

// creatorMemo keeps the identities the last create of a call resolved,
// so that a call's items made as one identity resolve it once (creator
// reads the call's context and the group cache).
type creatorMemo struct {
	set          bool
	cred         rpc.Cred
	check, owner posix.Cred
}

// of returns s.creator(ctx, cred), resolved again only if cred differs
// from the last one's; a nil memo resolves every time.
func (m *creatorMemo) of(ctx context.Context, s *Server, cred rpc.Cred) (check, owner posix.Cred) {
	if m == nil {
		return s.creator(ctx, cred)
	}
	if !m.set || m.cred != cred {
		m.check, m.owner = s.creator(ctx, cred)
		m.cred, m.set = cred, true
	}
	return m.check, m.owner
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
