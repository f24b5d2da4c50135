package mds

import (
	"context"
	"syscall"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/layout"
)

// Permission checks. The leader decides every one under the FSM's read
// lock, before raft.Apply, with package posix: a refused request costs no
// log space, and what a decision computes (a new inode's group and mode,
// the bits a chown or a write clears) goes into the command, so the FSM
// stays deterministic. A change racing the check (a chmod between the
// check and the apply) is decided on the state the check saw, as a local
// file system decides on the state at the system call's start.
//
// Path-based calls (walk, lookup) need search permission on every
// directory they pass; inode-based calls (getattr, setattr, xattrs, open)
// are checked on the inode alone, as an NFS server does with file handles:
// the client walked the path to get the inode number.

// perm returns the access view of n.
func perm(n *inode) *posix.Inode {
	return &posix.Inode{Mode: n.Mode, Uid: n.Uid, Gid: n.Gid}
}

// check runs fn on the state under the read lock.
func (s *Server) check(fn func(st *state) error) error {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return fn(s.fsm.st)
}

// search checks that c may search directory dir (a missing or non-directory
// dir is left to the operation to report).
func (st *state) search(c *posix.Cred, dir uint64) error {
	d, err := st.dir(dir)
	if err != nil {
		return nil
	}
	return wrapDenied(posix.Permission(c, perm(d), posix.Exec), "search directory %d", dir)
}

// wrapDenied gives a refusal the wire form: its errno and a message naming
// what was refused.
func wrapDenied(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return errf(rpc.ToErrno(err), format+": "+err.Error(), args...)
}

// mayCreate checks a new entry name in dir: search, then (if the name is
// free; an existing one is the operation's EEXIST) write permission. It
// returns dir's access view for posix.New.
func (st *state) mayCreate(c *posix.Cred, dir uint64, name string) (*posix.Inode, error) {
	d, err := st.dir(dir)
	if err != nil {
		return nil, nil
	}
	if err := st.search(c, dir); err != nil {
		return nil, err
	}
	p := perm(d)
	if _, ok := d.Entries[name]; ok {
		return p, nil
	}
	if err := posix.Create(c, p); err != nil {
		// Formatted only for a refusal: its arguments cost every create
		// an allocation each.
		return p, wrapDenied(err, "create %q in directory %d", name, dir)
	}
	return p, nil
}

// mayDelete checks removing entry name of dir: search, then may_delete.
func (st *state) mayDelete(c *posix.Cred, dir uint64, name string) error {
	if err := st.search(c, dir); err != nil {
		return err
	}
	n, err := st.child(dir, name)
	if err != nil {
		return nil // the operation reports it
	}
	return wrapDenied(posix.Delete(c, perm(st.get(dir)), perm(n)), "remove %q from directory %d", name, dir)
}

// mayRename checks rename(2): search on both directories, may_delete of
// the source, may_delete of a target or may_create in its directory, and
// write permission on a directory that moves to another parent (its ".."
// changes).
func (st *state) mayRename(c *posix.Cred, r *rpc.RenameReq) error {
	for _, dir := range []uint64{r.OldParent, r.NewParent} {
		if err := st.search(c, dir); err != nil {
			return err
		}
	}
	src, err := st.child(r.OldParent, r.OldName)
	if err != nil {
		return nil
	}
	nd, err := st.dir(r.NewParent)
	if err != nil {
		return nil
	}
	dstIno, exists := nd.Entries[r.NewName]
	switch {
	case exists && r.Flags&rpc.RenameNoReplace != 0, exists && dstIno == src.Ino,
		src.isDir() && st.isAncestor(src.Ino, r.NewParent):
		return nil // the FSM's EEXIST, no-op or EINVAL comes first
	}
	if err := posix.Delete(c, perm(st.get(r.OldParent)), perm(src)); err != nil {
		return wrapDenied(err, "rename %q from directory %d", r.OldName, r.OldParent)
	}
	var dst *inode
	if exists {
		dst = st.get(dstIno)
		err = posix.Delete(c, perm(nd), perm(dst))
	} else {
		err = posix.Create(c, perm(nd))
	}
	if err != nil {
		return wrapDenied(err, "rename %q into directory %d", r.NewName, r.NewParent)
	}
	if r.OldParent != r.NewParent {
		if src.isDir() {
			err = posix.Permission(c, perm(src), posix.Write)
		}
		if err == nil && dst != nil && r.Flags&rpc.RenameExchange != 0 && dst.isDir() {
			err = posix.Permission(c, perm(dst), posix.Write)
		}
	}
	return wrapDenied(err, "rename directory %q to another directory", r.OldName)
}

// maySetattr checks a setattr and returns the request to apply: a chmod's
// bits with setgid dropped where Linux drops it, and the bits a chown
// clears. Times asked as "now" become the leader's now.
func (st *state) maySetattr(c *posix.Cred, r *rpc.SetattrReq, now int64) (rpc.SetattrReq, error) {
	out := *r
	n, err := st.node(r.Ino)
	if err != nil {
		return out, nil
	}
	a := perm(n)
	if r.Valid&(rpc.SetUid|rpc.SetGid) != 0 {
		mode, err := posix.Chown(c, a, r.Uid, r.Gid, r.Valid&rpc.SetUid != 0, r.Valid&rpc.SetGid != 0)
		if err != nil {
			return out, wrapDenied(err, "change the owner of inode %d", r.Ino)
		}
		if mode != a.Mode&0o7777 && r.Valid&rpc.SetMode == 0 {
			out.Valid |= rpc.SetMode
			out.Mode = mode
		}
	}
	if r.Valid&rpc.SetMode != 0 {
		if posix.DropsPrivOnly(a, r.Mode) && posix.Permission(c, a, posix.Write) == nil {
			out.Mode = r.Mode & 0o7777
		} else {
			mode, err := posix.Chmod(c, a, r.Mode)
			if err != nil {
				return out, wrapDenied(err, "change the mode of inode %d", r.Ino)
			}
			out.Mode = mode
		}
	}
	if r.Valid&rpc.SetSize != 0 && n.isFile() {
		if err := posix.Truncate(c, a); err != nil {
			return out, wrapDenied(err, "truncate inode %d", r.Ino)
		}
		if limit := n.Layout.MaxSize(); n.Layout.Width > 0 && r.Size > uint64(limit) {
			return out, errf(syscall.EFBIG, "truncate inode %d to %d bytes: past the largest file its layout %s addresses (%s)",
				r.Ino, r.Size, n.Layout, layout.FormatSize(limit))
		}
	}
	if r.Valid&(rpc.SetAtime|rpc.SetMtime) != 0 {
		explicit := r.Valid&rpc.SetAtime != 0 && r.Valid&rpc.SetAtimeNow == 0 ||
			r.Valid&rpc.SetMtime != 0 && r.Valid&rpc.SetMtimeNow == 0
		if err := posix.Utimes(c, a, explicit); err != nil {
			return out, wrapDenied(err, "set the times of inode %d", r.Ino)
		}
	}
	if r.Valid&rpc.SetAtimeNow != 0 {
		out.Atime = now
	}
	if r.Valid&rpc.SetMtimeNow != 0 {
		out.Mtime = now
	}
	out.Valid &^= rpc.SetAtimeNow | rpc.SetMtimeNow
	return out, nil
}

// mayXattr checks reading or changing the attribute name of inode ino.
func (st *state) mayXattr(c *posix.Cred, ino uint64, name string, write bool) error {
	n, err := st.node(ino)
	if err != nil {
		return nil
	}
	return wrapDenied(posix.Xattr(c, perm(n), name, write), "xattr %q of inode %d", name, ino)
}

// mayOpen checks a LAYOUTGET: an open for reading, or for writing. held
// says the caller holds the file open already or just created it: its
// owner is then not held to the mode bits (rpc.LayoutGetReq).
func (st *state) mayOpen(c *posix.Cred, ino uint64, write, held bool) error {
	n, err := st.node(ino)
	if err != nil || held && c.Uid == n.Uid {
		return nil
	}
	return wrapDenied(posix.Open(c, perm(n), !write, write), "open inode %d", ino)
}

// creator returns who checks and who owns a create, mkdir or symlink.
// The owner is the caller of ctx, unless the caller is root and the message
// names another owner (root may create for a user, as it may chown). A
// request that names no caller (an older client, which puts the owner in
// the message) is unchecked (root) and owned by def.
func (s *Server) creator(ctx context.Context, def rpc.Cred) (check, owner posix.Cred) {
	_, claimed := rpc.CredFrom(ctx)
	if _, proved := identity.FromContext(ctx); !proved && !claimed {
		return posix.Cred{}, posix.Cred{Uid: def.Uid, Gid: def.Gid, Groups: s.groups.of(def.Uid)}
	}
	c := s.caller(ctx)
	if c.Root() && def != (rpc.Cred{}) {
		return c, posix.Cred{Uid: def.Uid, Gid: def.Gid, Groups: s.groups.of(def.Uid)}
	}
	return c, c
}

// newInode checks that c may create name in dir and returns the new
// inode's group and permission bits for owner (setgid directories).
func (s *Server) newInode(c, owner *posix.Cred, dir uint64, name string, mode uint32, isDir bool) (gid, bits uint32, err error) {
	err = s.check(func(st *state) error {
		d, err := st.mayCreate(c, dir, name)
		if d != nil {
			gid, bits = posix.New(owner, d, mode, isDir)
		} else {
			gid, bits = owner.Gid, mode&0o7777
		}
		return err
	})
	return gid, bits, err
}

// mayLink checks link(2): search on the new directory; if the name is free,
// protected_hardlinks (posix.Link) and then may_create.
func (st *state) mayLink(c *posix.Cred, r *rpc.LinkReq) error {
	if err := st.search(c, r.NewParent); err != nil {
		return err
	}
	n, err := st.node(r.Ino)
	d, derr := st.dir(r.NewParent)
	if err != nil || derr != nil {
		return nil
	}
	if _, ok := d.Entries[r.NewName]; ok {
		return nil // EEXIST
	}
	if err := posix.Link(c, perm(n)); err != nil {
		return wrapDenied(err, "link inode %d", r.Ino)
	}
	return wrapDenied(posix.Create(c, perm(d)), "link %q into directory %d", r.NewName, r.NewParent)
}

// readdirAs is readdir for caller c, who needs read permission on it.
func (st *state) readdirAs(c *posix.Cred, ino uint64, after string, limit uint32) ([]rpc.DirEntry, bool, error) {
	if d, err := st.dir(ino); err == nil {
		if err := posix.Permission(c, perm(d), posix.Read); err != nil {
			return nil, false, wrapDenied(err, "list directory %d", ino)
		}
	}
	return st.readdir(ino, after, limit)
}
