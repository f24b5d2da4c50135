package mds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Reads are served from the local FSM under its read lock, never through
// raft. With a single voter a stale read is impossible: the FSM is the
// leader's, and every acknowledged change is applied before its reply.
// Once there are several MDS replicas (the HA issue), a follower's FSM may
// lag the leader's. Per endpoint:
//
//   - lookup, getattr, walk, readdir, readlink, getxattr, listxattr:
//     a stale read is allowed on a follower (NFS attribute-cache
//     semantics); close-to-open is kept by layoutget.
//   - layoutget: must be served by the leader (close-to-open: the fresh
//     size and the current generation) — a follower must redirect or use
//     VerifyLeader/Barrier first.
//   - statfs: stale allowed, but the capacity part is leader soft state, so
//     it is only meaningful on the leader.
//   - cluster: describes the node that answers; any node.
//   - lock calls: leader only (locks.go); a follower answers EAGAIN.
//
// Every change goes through raft.Apply, which fails with EAGAIN on a node
// that is not the leader.

// register serves every MDS method on m.
func (s *Server) register(m *rpc.Mux) {
	handle(s, m, rpc.MLookup, s.lookup)
	handle(s, m, rpc.MWalk, s.walk)
	handle(s, m, rpc.MGetattr, s.getattr)
	handle(s, m, rpc.MGetattrMany, s.getattrMany)
	handle(s, m, rpc.MSetattr, s.setattr)
	handle(s, m, rpc.MCreate, s.create)
	handle(s, m, rpc.MCreateMany, s.createMany)
	handle(s, m, rpc.MMkdir, s.mkdir)
	handle(s, m, rpc.MSymlink, s.symlink)
	handle(s, m, rpc.MMknod, s.mknod)
	handle(s, m, rpc.MReadlink, s.readlink)
	handle(s, m, rpc.MLink, s.link)
	handle(s, m, rpc.MUnlink, s.unlink)
	handle(s, m, rpc.MRmdir, s.rmdir)
	handle(s, m, rpc.MRename, s.rename)
	handle(s, m, rpc.MReaddir, s.readdir)
	handle(s, m, rpc.MSetXattr, s.setXattr)
	handle(s, m, rpc.MGetXattr, s.getXattr)
	handle(s, m, rpc.MListXattr, s.listXattr)
	handle(s, m, rpc.MRemoveXattr, s.removeXattr)
	handle(s, m, rpc.MStatFS, s.statFS)
	handle(s, m, rpc.MLayoutGet, s.layoutGet)
	handle(s, m, rpc.MLayoutCommit, s.layoutCommit)
	handle(s, m, rpc.MLayoutReturn, s.layoutReturn)
	handle(s, m, rpc.MHeartbeat, s.heartbeat)
	handle(s, m, rpc.MCluster, s.cluster)
	handle(s, m, rpc.MAuthSession, s.authSession)
	handle(s, m, rpc.MLockGet, s.lockGet)
	handle(s, m, rpc.MLockSet, s.lockSet)
	handle(s, m, rpc.MLockRelease, s.lockRelease)
	handle(s, m, rpc.MSessionRenew, s.sessionRenew)
	handle(s, m, rpc.MAddVoter, s.addVoter)
	handle(s, m, rpc.MRemoveVoter, s.removeVoter)
	handle(s, m, rpc.MTierPut, s.tierPut)
	handle(s, m, rpc.MTierGet, s.tierGet)
	handle(s, m, rpc.MTierList, s.tierList)
	handle(s, m, rpc.MQuotaSet, s.quotaSet)
	handle(s, m, rpc.MQuotaGet, s.quotaGet)
	handle(s, m, rpc.MQuotaRoom, s.quotaRoomOf)
	handle(s, m, rpc.MQoSPolicyGet, s.qosPolicyGet)
	handle(s, m, rpc.MQoSPolicySet, s.qosPolicySet)
	handle(s, m, rpc.MQoSStatus, s.qosStatus)
	handle(s, m, rpc.MQoSDrain, s.qosDrain)
	handle(s, m, rpc.MProjectSet, s.projectSet)
	handle(s, m, rpc.MInlineWrite, s.inlineWrite)
	handle(s, m, rpc.MInlineSpill, s.inlineSpill)
	s.registerRepair(m)
	s.registerPlus(m)
}

// handle registers fn for method and counts its calls and failures. On a
// follower every method but cluster is refused with a redirect (ha.go).
func handle[Req, Resp any](s *Server, m *rpc.Mux, method string, fn func(context.Context, *Req) (*Resp, error)) {
	c := s.met.op(strings.TrimPrefix(method, "mds."))
	anyNode := method == rpc.MCluster || method == rpc.MAuthSession
	rpc.Handle(m, method, func(ctx context.Context, r *Req) (*Resp, error) {
		if !anyNode && !s.isLeader() {
			c.total.Add(1)
			c.errors.Add(1)
			return nil, s.notLeader()
		}
		resp, err := fn(ctx, r)
		c.total.Add(1)
		if err != nil {
			c.errors.Add(1)
		}
		return resp, err
	})
}

// apply runs a command through raft (with group commit, proposer.go) and
// returns the FSM's result. A command that breaks its own limits is
// refused here, before it costs log space (validation.go).
func (s *Server) apply(t cmdType, payload any) (result, error) {
	data, err := s.encodeChecked(t, payload)
	if err != nil {
		return result{}, err
	}
	return s.prop.apply(data)
}

// encodeChecked returns the log entry of a command after the checks apply
// makes before raft (validation, precheck).
func (s *Server) encodeChecked(t cmdType, payload any) ([]byte, error) {
	if err := validateCommand(payload); err != nil {
		return nil, err
	}
	if err := s.precheck(t, payload); err != nil {
		return nil, err
	}
	return encodeCommand(t, payload), nil
}

func (s *Server) now() int64 { return s.clock().UnixNano() }

func (s *Server) lookup(ctx context.Context, r *rpc.EntryReq) (*rpc.AttrResp, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	err := s.fsm.st.search(&c, r.Parent)
	var n *inode
	if err == nil {
		n, err = s.fsm.st.child(r.Parent, r.Name)
	}
	var a rpc.Attr
	if err == nil {
		a = n.attr()
	}
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: a}, nil
}

func (s *Server) walk(ctx context.Context, r *rpc.WalkReq) (*rpc.AttrResp, error) {
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	n, err := s.fsm.st.walkAs(&c, r.Path, r.Follow)
	var a rpc.Attr
	if err == nil {
		a = n.attr()
	}
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: a}, nil
}

func (s *Server) getattr(_ context.Context, r *rpc.InoReq) (*rpc.AttrResp, error) {
	s.fsm.mu.RLock()
	n, err := s.fsm.st.node(r.Ino)
	var a rpc.Attr
	if err == nil {
		a = n.attr()
	}
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: a}, nil
}

func (s *Server) setattr(ctx context.Context, r *rpc.SetattrReq) (*rpc.AttrResp, error) {
	c, now := s.caller(ctx), s.now()
	var req rpc.SetattrReq
	cut := false // the size goes down: NFS clients' layouts are recalled
	err := s.check(func(st *state) (err error) {
		req, err = st.maySetattr(&c, r, now)
		if n, nerr := st.node(r.Ino); err == nil && nerr == nil && r.Valid&rpc.SetSize != 0 && n.isFile() && r.Size < n.Size {
			cut = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if req.Valid&rpc.SetSize != 0 && req.Size > s.inlineMax() {
		if err := s.spillInline(ctx, req.Ino, req.Size); err != nil {
			return nil, err
		}
	}
	res, err := s.apply(cmdSetattr, &setattrCmd{Req: req, Now: now})
	if err != nil {
		return nil, err
	}
	if cut {
		// The client cut the components before this call: the layouts
		// NFS clients hold name bytes that are gone, and a writer's late
		// WRITEs must not grow them again (recall.go).
		s.recallLayouts(r.Ino)
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}

func (s *Server) create(ctx context.Context, r *rpc.CreateReq) (*rpc.CreateResp, error) {
	var cmd createCmd
	open, err := s.prepareCreate(ctx, r, nil, &cmd)
	if err != nil || open != nil {
		return open, err
	}
	res, err := s.apply(cmdCreate, &cmd)
	if err != nil {
		return nil, err
	}
	return &rpc.CreateResp{Attr: res.attr, Created: res.created}, nil
}

// prepareCreate checks a create against the leader's state and fills in
// cmd, its command, with the new file's layout placed; or, for a
// non-exclusive create of an existing regular file, returns the file (an
// open: no raft). who, if not nil, keeps the identity of the last create
// of the same call.
func (s *Server) prepareCreate(ctx context.Context, r *rpc.CreateReq, who *creatorMemo, cmd *createCmd) (*rpc.CreateResp, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	var own layout.Policy
	if r.Layout != "" {
		p, err := layout.Parse(r.Layout)
		if err != nil {
			return nil, errf(syscall.EINVAL, "create %q: %v", r.Name, err)
		}
		own = p
	}
	c, owner := who.of(ctx, s, r.Cred)
	s.fsm.mu.RLock()
	st := s.fsm.st
	d, err := st.dir(r.Parent)
	var pd *posix.Inode
	if err == nil {
		pd, err = st.mayCreate(&c, r.Parent, r.Name)
	}
	if err != nil {
		s.fsm.mu.RUnlock()
		return nil, err
	}
	if ino, ok := d.Entries[r.Name]; ok && !r.Exclusive {
		if n := st.get(ino); n.isFile() {
			a := n.attr()
			s.fsm.mu.RUnlock()
			return &rpc.CreateResp{Attr: a}, nil // open of an existing file: no raft
		}
	}
	inherited, widthSet := st.policy(r.Parent, s.def)
	s.fsm.mu.RUnlock()

	p, err := layout.Resolve(own, inherited)
	if err != nil {
		return nil, errf(syscall.EINVAL, "create %q: %v", r.Name, err)
	}
	lay, err := s.reg.place(p, widthSet || own.Width != 0)
	if err != nil {
		return nil, errf(syscall.ENOSPC, "create %q: %v", r.Name, err)
	}
	gid, mode := posix.New(&owner, pd, r.Mode, false)
	*cmd = createCmd{
		Parent:    r.Parent,
		Name:      r.Name,
		Mode:      mode,
		Uid:       owner.Uid,
		Gid:       gid,
		Exclusive: r.Exclusive,
		Layout:    lay,
		Now:       s.now(),
		Inline:    s.inlineMax() > 0 && r.Inline && s.inlineRoom(0),
	}
	return nil, nil
}

func (s *Server) mkdir(ctx context.Context, r *rpc.MkdirReq) (*rpc.AttrResp, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	c, owner := s.creator(ctx, r.Cred)
	gid, mode, err := s.newInode(&c, &owner, r.Parent, r.Name, r.Mode, true)
	if err != nil {
		return nil, err
	}
	res, err := s.apply(cmdMkdir, &mkdirCmd{Parent: r.Parent, Name: r.Name, Mode: mode, Uid: owner.Uid, Gid: gid, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}

func (s *Server) symlink(ctx context.Context, r *rpc.SymlinkReq) (*rpc.AttrResp, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	c, owner := s.creator(ctx, r.Cred)
	gid, _, err := s.newInode(&c, &owner, r.Parent, r.Name, 0o777, false)
	if err != nil {
		return nil, err
	}
	res, err := s.apply(cmdSymlink, &symlinkCmd{Parent: r.Parent, Name: r.Name, Target: r.Target, Uid: owner.Uid, Gid: gid, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}

func (s *Server) readlink(_ context.Context, r *rpc.InoReq) (*rpc.ReadlinkResp, error) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	n, err := s.fsm.st.node(r.Ino)
	if err != nil {
		return nil, err
	}
	if !n.isSymlink() {
		return nil, errf(syscall.EINVAL, "inode %d is not a symbolic link", r.Ino)
	}
	return &rpc.ReadlinkResp{Target: n.Target}, nil
}

func (s *Server) link(ctx context.Context, r *rpc.LinkReq) (*rpc.AttrResp, error) {
	if err := checkName(r.NewName); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayLink(&c, r) }); err != nil {
		return nil, err
	}
	res, err := s.apply(cmdLink, &linkCmd{Ino: r.Ino, NewParent: r.NewParent, NewName: r.NewName, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}

func (s *Server) unlink(ctx context.Context, r *rpc.EntryReq) (*rpc.Empty, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayDelete(&c, r.Parent, r.Name) }); err != nil {
		return nil, err
	}
	if _, err := s.apply(cmdUnlink, &entryCmd{Parent: r.Parent, Name: r.Name, Now: s.now()}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) rmdir(ctx context.Context, r *rpc.EntryReq) (*rpc.Empty, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayDelete(&c, r.Parent, r.Name) }); err != nil {
		return nil, err
	}
	if _, err := s.apply(cmdRmdir, &entryCmd{Parent: r.Parent, Name: r.Name, Now: s.now()}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) rename(ctx context.Context, r *rpc.RenameReq) (*rpc.Empty, error) {
	for _, name := range []string{r.OldName, r.NewName} {
		if err := checkName(name); err != nil {
			return nil, err
		}
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayRename(&c, r) }); err != nil {
		return nil, err
	}
	cmd := &renameCmd{OldParent: r.OldParent, OldName: r.OldName, NewParent: r.NewParent, NewName: r.NewName, Flags: r.Flags, Now: s.now()}
	if _, err := s.apply(cmdRename, cmd); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) readdir(ctx context.Context, r *rpc.ReaddirReq) (*rpc.ReaddirResp, error) {
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	ents, more, err := s.fsm.st.readdirAs(&c, r.Ino, r.After, r.Limit)
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &rpc.ReaddirResp{Entries: ents, More: more}, nil
}

func (s *Server) setXattr(ctx context.Context, r *rpc.XattrReq) (*rpc.Empty, error) {
	if err := checkXattr(r.Name, r.Value); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayXattr(&c, r.Ino, r.Name, true) }); err != nil {
		return nil, err
	}
	if r.Name == rpc.LayoutXattr {
		s.fsm.mu.RLock()
		n, err := s.fsm.st.node(r.Ino)
		var file bool
		var size uint64
		var cur layout.Layout
		if err == nil {
			file, size, cur = n.isFile(), n.Size, n.Layout
		}
		s.fsm.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		if file {
			return s.relayout(r, size, cur)
		}
	}
	cmd := &xattrCmd{Ino: r.Ino, Name: r.Name, Value: r.Value, Flags: r.Flags, Now: s.now()}
	if _, err := s.apply(cmdSetXattr, cmd); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

// relayout sets the layout xattr of a file: allowed while it is empty, it
// places the file anew under the given policy (unset fields keep the
// current layout's) and bumps its generation.
func (s *Server) relayout(r *rpc.XattrReq, size uint64, cur layout.Layout) (*rpc.Empty, error) {
	what := fmt.Sprintf("inode %d", r.Ino)
	p, err := layout.Parse(string(r.Value))
	if err != nil {
		return nil, errf(syscall.EINVAL, "%s on %s: %v", r.Name, what, err)
	}
	if p.IsZero() {
		return nil, errf(syscall.EINVAL, "%s on %s: a file's layout cannot be empty", r.Name, what)
	}
	if r.Flags&rpc.XattrCreate != 0 {
		return nil, errf(syscall.EEXIST, "%s on %s: a file always has a layout", r.Name, what)
	}
	if size > 0 {
		return nil, errf(syscall.EEXIST, "cannot change the layout of a file that has data (size %d)", size)
	}
	full, err := layout.Resolve(p, cur.Policy())
	if err != nil {
		return nil, errf(syscall.EINVAL, "%s on %s: %v", r.Name, what, err)
	}
	lay, err := s.reg.place(full, p.Width != 0)
	if err != nil {
		return nil, errf(syscall.ENOSPC, "layout of %s: %v", what, err)
	}
	if _, err := s.apply(cmdRelayout, &relayoutCmd{Ino: r.Ino, Layout: lay, Now: s.now()}); err != nil {
		return nil, err
	}
	s.recallLayouts(r.Ino) // the layouts NFS clients hold name the old generation
	return &rpc.Empty{}, nil
}

func (s *Server) getXattr(ctx context.Context, r *rpc.XattrReq) (*rpc.XattrResp, error) {
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	err := s.fsm.st.mayXattr(&c, r.Ino, r.Name, false)
	var v []byte
	if err == nil {
		v, err = s.fsm.st.getXattr(r.Ino, r.Name, s.def)
	}
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &rpc.XattrResp{Value: v}, nil
}

func (s *Server) listXattr(ctx context.Context, r *rpc.XattrReq) (*rpc.ListXattrResp, error) {
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	names, err := s.fsm.st.listXattr(r.Ino)
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(name string) bool { return !posix.XattrVisible(&c, name) })
	return &rpc.ListXattrResp{Names: names}, nil
}

func (s *Server) removeXattr(ctx context.Context, r *rpc.XattrReq) (*rpc.Empty, error) {
	if err := checkXattr(r.Name, nil); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayXattr(&c, r.Ino, r.Name, true) }); err != nil {
		return nil, err
	}
	if _, err := s.apply(cmdRemoveXattr, &xattrCmd{Ino: r.Ino, Name: r.Name, Now: s.now()}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) statFS(_ context.Context, _ *rpc.Empty) (*rpc.StatFSResp, error) {
	capacity, free, up := s.reg.totals()
	s.fsm.mu.RLock()
	files, total := len(s.fsm.st.inodes), len(s.fsm.st.ds)
	s.fsm.mu.RUnlock()
	return &rpc.StatFSResp{Capacity: capacity, Free: free, Files: uint64(files), DSUp: uint32(up), DSTotal: uint32(total)}, nil
}

func (s *Server) layoutGet(ctx context.Context, r *rpc.LayoutGetReq) (*rpc.LayoutGetResp, error) {
	c := s.caller(ctx)
	tag, err := clientTag(r.Job, r.Class)
	if err != nil {
		return nil, err
	}
	if err := s.check(func(st *state) error { return st.mayOpen(&c, r.Ino, r.Write, r.Refresh || r.Created) }); err != nil {
		return nil, err
	}
	if !r.Inline {
		// A caller that does not read inline data finds the bytes on the
		// data servers (inline.go).
		if err := s.spillInline(ctx, r.Ino, 0); err != nil {
			return nil, err
		}
	}
	open := !r.Refresh || r.Count
	uncounted := r.Write && open && r.Inline && s.isInline(r.Ino)
	resp, err := s.layoutFor(ctx, r.Ino, r.Write, open && !uncounted, tag)
	if err == nil && r.Inline {
		resp.Uncounted = uncounted
		err = s.attachInline(resp, r.Ino)
	}
	return resp, err
}

func (s *Server) layoutCommit(ctx context.Context, r *rpc.LayoutCommitReq) (*rpc.AttrResp, error) {
	c := s.caller(ctx)
	s.fsm.mu.RLock()
	n, err := s.fsm.st.node(r.Ino)
	var a rpc.Attr
	var file bool
	var kept uint32 // the bits the writer leaves (file_remove_privs)
	if err == nil {
		a, file = n.attr(), n.isFile()
		kept = posix.KillPriv(&c, perm(n))
	}
	s.fsm.mu.RUnlock()
	kill := kept != a.Mode&0o7777
	switch {
	case err != nil:
		return nil, err
	case !file:
		return nil, errf(syscall.EINVAL, "inode %d is not a regular file", r.Ino)
	case r.Gen != a.Gen, r.End <= a.Size && r.Mtime == a.Mtime && !kill:
		return &rpc.AttrResp{Attr: a}, nil // stale generation, or nothing new: no raft
	}
	res, err := s.apply(cmdCommit, &commitCmd{Ino: r.Ino, Gen: r.Gen, End: r.End, Mtime: r.Mtime, Now: s.now(), KillPriv: kill, Mode: kept})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}

func (s *Server) heartbeat(ctx context.Context, r *rpc.HeartbeatReq) (*rpc.HeartbeatResp, error) {
	if err := checkDSNames(r); err != nil {
		return nil, err
	}
	s.fsm.mu.RLock()
	rec, ok := s.fsm.st.ds[r.ID]
	s.fsm.mu.RUnlock()
	if err := s.checkDSIdentity(ctx, r, rec, ok); err != nil {
		return nil, err
	}
	if err := s.registerDS(r); err != nil {
		return nil, err
	}
	if s.reg.beat(r) {
		s.kickGC() // its orphans can be collected now
	}
	s.ledger.beat(s.clock(), r)
	resp := &rpc.HeartbeatResp{IntervalMs: uint32(s.cfg.HeartbeatInterval.Milliseconds())}
	s.qosBeat(r, resp)
	return resp, nil
}

func (s *Server) cluster(ctx context.Context, _ *rpc.Empty) (*rpc.ClusterResp, error) {
	return s.Cluster(ctx)
}

// registerDS records a data server's id, address, node and rack in raft
// when they are new or changed. One registration at a time: a heartbeat
// that arrives while the previous one's entry is being committed finds it
// applied, rather than appending the same entry again.
func (s *Server) registerDS(r *rpc.HeartbeatReq) error {
	changed := func() bool {
		s.fsm.mu.RLock()
		defer s.fsm.mu.RUnlock()
		rec, ok := s.fsm.st.ds[r.ID]
		return !ok || rec.Addr != r.Addr || rec.Node != r.Node || rec.Rack != r.Rack
	}
	if !changed() {
		return nil
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if !changed() {
		return nil
	}
	if _, err := s.apply(cmdRegisterDS, &registerCmd{ID: r.ID, Addr: r.Addr, Node: r.Node, Rack: r.Rack}); err != nil {
		return err
	}
	s.log.Info("ds_registered", "ds_id", r.ID, "ds_addr", r.Addr, "node", r.Node, "rack", r.Rack)
	return nil
}
