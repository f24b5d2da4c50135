package mds

import (
	"context"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Quotas, as ext4's and Lustre's: limits of bytes and inodes per user
// (the owner's uid) and per project (an id on every inode, inherited from
// the directory it is created in). The FSM keeps every user's and
// project's usage up to date, limit or not, so that a limit set later
// holds at once: each command records the inodes it touches (state.w,
// add, removeDir) with what they counted before, and settleQuota counts
// them again after. Usage is derived state: a snapshot holds the limits,
// restore recounts the usage.
//
// Enforcement: a create, mkdir or symlink past an inode limit, and a
// LAYOUTCOMMIT or truncate that grows a file past a byte limit, are
// refused with EDQUOT, by the leader before raft.Apply (precheck) and by
// the FSM, which decides. A file's bytes are its size (holes included,
// as st_blocks counts them here).

// quotaKey names one user's or project's quota.
type quotaKey struct {
	Kind uint8 // rpc.QuotaUser, rpc.QuotaProject
	ID   uint32
}

// quotaLimit is one quota's limits (0: none); it is also its snapshot
// record.
type quotaLimit struct {
	Kind   uint8
	ID     uint32
	Bytes  uint64
	Inodes uint64
}

// quotaUsage is what a user or project uses.
type quotaUsage struct {
	Bytes  uint64
	Inodes uint64
}

// quotaSetCmd sets (or with both limits 0 removes) a quota.
type quotaSetCmd struct {
	Limit quotaLimit
}

// projectCmd sets an inode's project.
type projectCmd struct {
	Ino     uint64
	Project uint32
	Now     int64
}

// touchedInode is an inode a command changed, with what it counted for
// before (none for a new inode).
type touchedInode struct {
	ino     uint64
	had     bool
	uid     uint32
	project uint32
	bytes   uint64
	inline  uint64 // its inline bytes (inline.go)
}

// usageOf returns what n counts for: its owner, its project, its bytes.
func usageOf(n *inode) (uid, project uint32, bytes uint64) {
	if n.isFile() {
		bytes = n.Size
	}
	return n.Uid, n.Project, bytes
}

// noteTouch records inode ino's count before a command changes it.
func (st *state) noteTouch(ino uint64) {
	for _, t := range st.touched {
		if t.ino == ino {
			return
		}
	}
	t := touchedInode{ino: ino}
	if n := st.inodes[ino]; n != nil {
		t.had = true
		t.uid, t.project, t.bytes = usageOf(n)
		t.inline = uint64(len(n.Data))
	}
	st.touched = append(st.touched, t)
}

// noteNew records a new inode, which counted for nothing before.
func (st *state) noteNew(ino uint64) {
	st.touched = append(st.touched, touchedInode{ino: ino})
}

// settleQuota recounts the inodes the last commands touched. An inode
// that still counts as it did (a directory that gained an entry) is left
// alone: taking it off and counting it again would change nothing.
func (st *state) settleQuota() {
	for _, t := range st.touched {
		n := st.inodes[t.ino]
		if t.had && n != nil {
			uid, project, bytes := usageOf(n)
			if uid == t.uid && project == t.project && bytes == t.bytes && uint64(len(n.Data)) == t.inline {
				continue
			}
		}
		if t.had {
			st.count(t.uid, t.project, t.bytes, -1)
			st.inline -= t.inline
		}
		if n != nil {
			uid, project, bytes := usageOf(n)
			st.count(uid, project, bytes, 1)
			st.inline += uint64(len(n.Data))
		}
	}
	st.touched = st.touched[:0]
}

// count adds (sign 1) or removes (-1) one inode of bytes to a user's and
// a project's usage.
func (st *state) count(uid, project uint32, bytes uint64, sign int) {
	for _, k := range [2]quotaKey{{rpc.QuotaUser, uid}, {rpc.QuotaProject, project}} {
		u := st.usage[k]
		if sign > 0 {
			u.Bytes += bytes
			u.Inodes++
		} else {
			u.Bytes -= bytes
			u.Inodes--
		}
		if u == (quotaUsage{}) {
			delete(st.usage, k)
		} else {
			st.usage[k] = u
		}
	}
}

// recountUsage counts every inode again (after a restore).
func (st *state) recountUsage() {
	st.usage = map[quotaKey]quotaUsage{}
	st.touched = nil
	st.inline = 0
	for _, n := range st.inodes {
		uid, project, bytes := usageOf(n)
		st.count(uid, project, bytes, 1)
		st.inline += uint64(len(n.Data))
	}
}

// projectOf returns the project a new entry of directory parent gets.
func (st *state) projectOf(parent uint64) uint32 {
	if d := st.inodes[parent]; d != nil {
		return d.Project
	}
	return 0
}

// quotaRoom refuses adding inodes and bytes to uid's and project's usage
// past a limit (EDQUOT). Project 0 is no project.
func (st *state) quotaRoom(uid, project uint32, bytes, inodes uint64) error {
	if len(st.quotas) == 0 {
		return nil
	}
	for _, k := range [2]quotaKey{{rpc.QuotaUser, uid}, {rpc.QuotaProject, project}} {
		l, ok := st.quotas[k]
		if !ok || k.Kind == rpc.QuotaProject && k.ID == 0 {
			continue
		}
		u := st.usage[k]
		switch {
		case inodes > 0 && l.Inodes > 0 && u.Inodes+inodes > l.Inodes:
			return errf(syscall.EDQUOT, "%s %d has %d of its %d inodes", kindName(k.Kind), k.ID, u.Inodes, l.Inodes)
		case bytes > 0 && l.Bytes > 0 && u.Bytes+bytes > l.Bytes:
			return errf(syscall.EDQUOT, "%s %d uses %d of its %d bytes, %d more would exceed it", kindName(k.Kind), k.ID, u.Bytes, l.Bytes, bytes)
		}
	}
	return nil
}

// batchInodeRoom is quotaRoom for one more inode of uid in project on top
// of those counted in pending (the inodes of earlier commands of one
// call, not yet applied); if there is room it counts this one in pending.
func (st *state) batchInodeRoom(pending map[quotaKey]uint64, uid, project uint32) error {
	if len(st.quotas) == 0 {
		return nil
	}
	keys := [2]quotaKey{{rpc.QuotaUser, uid}, {rpc.QuotaProject, project}}
	for _, k := range keys {
		l, ok := st.quotas[k]
		if !ok || k.Kind == rpc.QuotaProject && k.ID == 0 || l.Inodes == 0 {
			continue
		}
		if u := st.usage[k]; u.Inodes+pending[k]+1 > l.Inodes {
			return errf(syscall.EDQUOT, "%s %d has %d of its %d inodes and %d more on the way", kindName(k.Kind), k.ID, u.Inodes, l.Inodes, pending[k])
		}
	}
	for _, k := range keys {
		pending[k]++
	}
	return nil
}

func kindName(k uint8) string {
	if k == rpc.QuotaProject {
		return "project"
	}
	return "user"
}

// quotaCheck refuses a command that would take a user or project past a
// limit; the leader runs it before proposing, the FSM before applying.
func (st *state) quotaCheck(p any) error {
	if len(st.quotas) == 0 {
		return nil
	}
	switch c := p.(type) {
	case *createCmd:
		if d := st.inodes[c.Parent]; d != nil && d.isDir() {
			if _, ok := d.Entries[c.Name]; ok {
				return nil // an open of an existing file, or a refusal
			}
		}
		return st.quotaRoom(c.Uid, st.projectOf(c.Parent), 0, 1)
	case *mkdirCmd:
		return st.quotaRoom(c.Uid, st.projectOf(c.Parent), 0, 1)
	case *symlinkCmd:
		return st.quotaRoom(c.Uid, st.projectOf(c.Parent), 0, 1)
	case *mknodCmd:
		return st.quotaRoom(c.Uid, st.projectOf(c.Parent), 0, 1)
	case *commitCmd:
		n := st.inodes[c.Ino]
		if n == nil || !n.isFile() || c.Gen != n.Layout.Generation || c.End <= n.Size {
			return nil
		}
		return st.quotaRoom(n.Uid, n.Project, c.End-n.Size, 0)
	case *inlineWriteCmd:
		return st.inlineQuota(c)
	case *setattrCmd:
		n := st.inodes[c.Req.Ino]
		if n == nil || !n.isFile() || c.Req.Valid&rpc.SetSize == 0 || c.Req.Size <= n.Size {
			return nil
		}
		uid := n.Uid
		if c.Req.Valid&rpc.SetUid != 0 {
			uid = c.Req.Uid
		}
		return st.quotaRoom(uid, n.Project, c.Req.Size-n.Size, 0)
	}
	return nil
}

func (st *state) applyQuotaSet(c *quotaSetCmd) result {
	l := c.Limit
	if l.Kind != rpc.QuotaUser && l.Kind != rpc.QuotaProject {
		return fail(errf(syscall.EINVAL, "quota kind %d: want user or project", l.Kind))
	}
	k := quotaKey{l.Kind, l.ID}
	if l.Bytes == 0 && l.Inodes == 0 {
		delete(st.quotas, k)
	} else {
		st.quotas[k] = l
	}
	return result{}
}

func (st *state) applyProject(c *projectCmd) result {
	if _, err := st.node(c.Ino); err != nil {
		return fail(err)
	}
	w := st.w(c.Ino)
	w.Project = c.Project
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

// quota answers what a user or project uses and may use.
func (st *state) quota(kind uint8, id uint32) *rpc.QuotaResp {
	k := quotaKey{kind, id}
	u, l := st.usage[k], st.quotas[k]
	return &rpc.QuotaResp{Kind: kind, ID: id, Bytes: u.Bytes, Inodes: u.Inodes, BytesLimit: l.Bytes, InodesLimit: l.Inodes}
}

func (s *Server) quotaSet(ctx context.Context, r *rpc.QuotaReq) (*rpc.QuotaResp, error) {
	if c := s.caller(ctx); !c.Root() {
		return nil, errf(syscall.EPERM, "quota of %s %d: only root sets quotas", kindName(r.Kind), r.ID)
	}
	if r.Kind != rpc.QuotaUser && r.Kind != rpc.QuotaProject {
		return nil, errf(syscall.EINVAL, "quota kind %d: want user or project", r.Kind)
	}
	if _, err := s.apply(cmdQuotaSet, &quotaSetCmd{Limit: quotaLimit{Kind: r.Kind, ID: r.ID, Bytes: r.Bytes, Inodes: r.Inodes}}); err != nil {
		return nil, err
	}
	return s.quotaGet(ctx, r)
}

func (s *Server) quotaGet(_ context.Context, r *rpc.QuotaReq) (*rpc.QuotaResp, error) {
	if r.Kind != rpc.QuotaUser && r.Kind != rpc.QuotaProject {
		return nil, errf(syscall.EINVAL, "quota kind %d: want user or project", r.Kind)
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return s.fsm.st.quota(r.Kind, r.ID), nil
}

// quotaRoomOf answers how many bytes file r.Ino may still grow by before
// its owner's or its project's byte limit.
func (s *Server) quotaRoomOf(ctx context.Context, r *rpc.QuotaRoomReq) (*rpc.QuotaRoomResp, error) {
	// Only a writer of the file learns its size and its owner's room (as
	// for a LAYOUTGET for writing by a holder): an inode number is no
	// path, and a path's search permissions are not checked here.
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayOpen(&c, r.Ino, true, true) }); err != nil {
		return nil, err
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	n, err := s.fsm.st.node(r.Ino)
	if err != nil {
		return nil, err
	}
	if !n.isFile() {
		return nil, errf(syscall.EINVAL, "quota room of inode %d: not a regular file", r.Ino)
	}
	return &rpc.QuotaRoomResp{Size: n.Size, Room: s.fsm.st.bytesRoom(n.Uid, n.Project)}, nil
}

// bytesRoom is how many bytes uid and project may still use, the least of
// their byte limits' room (rpc.NoQuotaLimit: no byte limit applies).
func (st *state) bytesRoom(uid, project uint32) uint64 {
	room := rpc.NoQuotaLimit
	for _, k := range [2]quotaKey{{rpc.QuotaUser, uid}, {rpc.QuotaProject, project}} {
		l, ok := st.quotas[k]
		if !ok || l.Bytes == 0 || k.Kind == rpc.QuotaProject && k.ID == 0 {
			continue
		}
		u := st.usage[k].Bytes
		room = min(room, l.Bytes-min(u, l.Bytes))
	}
	return room
}

func (s *Server) projectSet(ctx context.Context, r *rpc.ProjectReq) (*rpc.AttrResp, error) {
	if c := s.caller(ctx); !c.Root() {
		return nil, errf(syscall.EPERM, "project of inode %d: only root sets projects", r.Ino)
	}
	res, err := s.apply(cmdProject, &projectCmd{Ino: r.Ino, Project: r.Project, Now: s.now()})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}
