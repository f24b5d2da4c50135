package client

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// clean makes name absolute and clean; Strata paths are rooted at the
// namespace's root.
func clean(name string) string {
	return path.Clean("/" + name)
}

// split returns the parent directory and last component of a clean path.
func split(name string) (string, string) {
	dir, base := path.Split(clean(name))
	return clean(dir), base
}

func (c *Client) walk(ctx context.Context, name string, follow bool) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MWalk, &rpc.WalkReq{Path: clean(name), Follow: follow}, &r); err != nil {
		return nil, err
	}
	return &r.Attr, nil
}

// parent resolves the directory that holds name and returns it with the
// last component. The root has no parent: EINVAL.
func (c *Client) parent(ctx context.Context, name string) (uint64, string, error) {
	dir, base := split(name)
	if base == "" {
		return 0, "", rpc.Errorf(syscall.EINVAL, "the root has no parent")
	}
	a, err := c.walk(ctx, dir, true)
	if err != nil {
		return 0, "", err
	}
	if !a.IsDir() {
		return 0, "", rpc.Errorf(syscall.ENOTDIR, "not a directory: "+dir)
	}
	return a.Ino, base, nil
}

// Stat returns the attributes of name, following symbolic links.
func (c *Client) Stat(ctx context.Context, name string) (*rpc.Attr, error) {
	a, err := c.walk(ctx, name, true)
	return a, pathErr("stat", name, err)
}

// Lstat returns the attributes of name without following a final symbolic link.
func (c *Client) Lstat(ctx context.Context, name string) (*rpc.Attr, error) {
	a, err := c.walk(ctx, name, false)
	return a, pathErr("lstat", name, err)
}

// Mkdir creates a directory with permissions perm.
func (c *Client) Mkdir(ctx context.Context, name string, perm uint32) error {
	p, base, err := c.parent(ctx, name)
	if err == nil {
		err = c.mds(ctx, rpc.MMkdir, &rpc.MkdirReq{Parent: p, Name: base, Mode: perm & 0o7777, Cred: c.cfg.Cred}, &rpc.AttrResp{})
	}
	return pathErr("mkdir", name, err)
}

// MkdirAll creates name and any missing parents; existing directories are fine.
func (c *Client) MkdirAll(ctx context.Context, name string, perm uint32) error {
	name = clean(name)
	if a, err := c.Stat(ctx, name); err == nil {
		if !a.IsDir() {
			return pathErr("mkdir", name, rpc.Errorf(syscall.ENOTDIR, "not a directory: "+name))
		}
		return nil
	}
	if dir, _ := split(name); dir != name {
		if err := c.MkdirAll(ctx, dir, perm); err != nil {
			return err
		}
	}
	err := c.Mkdir(ctx, name, perm)
	if errors.Is(err, syscall.EEXIST) {
		return nil // made concurrently
	}
	return err
}

// ReadDir lists a directory in name order, with each entry's attributes.
func (c *Client) ReadDir(ctx context.Context, name string) ([]rpc.DirEntry, error) {
	a, err := c.walk(ctx, name, true)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	if !a.IsDir() {
		return nil, pathErr("readdir", name, rpc.Errorf(syscall.ENOTDIR, "not a directory: "+clean(name)))
	}
	return c.ReadDirIno(ctx, a.Ino)
}

// ReadDirIno lists the directory with inode ino.
func (c *Client) ReadDirIno(ctx context.Context, ino uint64) ([]rpc.DirEntry, error) {
	var out []rpc.DirEntry
	after := ""
	for {
		var r rpc.ReaddirResp
		if err := c.mds(ctx, rpc.MReaddir, &rpc.ReaddirReq{Ino: ino, After: after}, &r); err != nil {
			return nil, err
		}
		out = append(out, r.Entries...)
		if !r.More || len(r.Entries) == 0 {
			return out, nil
		}
		after = r.Entries[len(r.Entries)-1].Name
	}
}

// Remove removes a file, symbolic link or empty directory.
func (c *Client) Remove(ctx context.Context, name string) error {
	p, base, err := c.parent(ctx, name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MLookup, &rpc.EntryReq{Parent: p, Name: base}, &r); err != nil {
		return pathErr("remove", name, err)
	}
	method := rpc.MUnlink
	if r.Attr.IsDir() {
		method = rpc.MRmdir
	}
	return pathErr("remove", name, c.mds(ctx, method, &rpc.EntryReq{Parent: p, Name: base}, &rpc.Empty{}))
}

// RemoveAll removes name and everything below it. A missing name is not an error.
func (c *Client) RemoveAll(ctx context.Context, name string) error {
	a, err := c.Lstat(ctx, name)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.IsDir() {
		ents, err := c.ReadDirIno(ctx, a.Ino)
		if err != nil {
			return pathErr("readdir", name, err)
		}
		for _, e := range ents {
			if err := c.RemoveAll(ctx, path.Join(clean(name), e.Name)); err != nil {
				return err
			}
		}
	}
	if clean(name) == "/" {
		return nil
	}
	err = c.Remove(ctx, name)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// Rename moves oldname to newname, replacing newname if it exists and is
// compatible (rename(2) semantics).
func (c *Client) Rename(ctx context.Context, oldname, newname string) error {
	return c.rename(ctx, oldname, newname, 0)
}

// RenameFlags is Rename with renameat2(2) flags (rpc.RenameNoReplace,
// rpc.RenameExchange).
func (c *Client) RenameFlags(ctx context.Context, oldname, newname string, flags uint32) error {
	return c.rename(ctx, oldname, newname, flags)
}

func (c *Client) rename(ctx context.Context, oldname, newname string, flags uint32) error {
	op, ob, err := c.parent(ctx, oldname)
	if err != nil {
		return pathErr("rename", oldname, err)
	}
	np, nb, err := c.parent(ctx, newname)
	if err != nil {
		return pathErr("rename", newname, err)
	}
	err = c.mds(ctx, rpc.MRename, &rpc.RenameReq{OldParent: op, OldName: ob, NewParent: np, NewName: nb, Flags: flags}, &rpc.Empty{})
	return pathErr("rename", oldname, err)
}

// Symlink creates newname as a symbolic link to target.
func (c *Client) Symlink(ctx context.Context, target, newname string) error {
	p, base, err := c.parent(ctx, newname)
	if err == nil {
		err = c.mds(ctx, rpc.MSymlink, &rpc.SymlinkReq{Parent: p, Name: base, Target: target, Cred: c.cfg.Cred}, &rpc.AttrResp{})
	}
	return pathErr("symlink", newname, err)
}

// Mknod creates path as a special file (mknod(2)): mode holds the type
// (rpc.TypeFifo, TypeChar, TypeBlock or TypeSocket) and the permissions,
// rdev the device number of a device node (rpc.Mkdev). Device nodes are
// root's only (EPERM).
func (c *Client) Mknod(ctx context.Context, path string, mode, rdev uint32) error {
	p, base, err := c.parent(ctx, path)
	if err == nil {
		err = c.mds(ctx, rpc.MMknod, &rpc.MknodReq{Parent: p, Name: base, Mode: mode, Rdev: rdev, Cred: c.cfg.Cred}, &rpc.AttrResp{})
	}
	return pathErr("mknod", path, err)
}

// Readlink returns the target of a symbolic link.
func (c *Client) Readlink(ctx context.Context, name string) (string, error) {
	a, err := c.walk(ctx, name, false)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	var r rpc.ReadlinkResp
	err = c.mds(ctx, rpc.MReadlink, &rpc.InoReq{Ino: a.Ino}, &r)
	return r.Target, pathErr("readlink", name, err)
}

// Link creates newname as a hard link to oldname.
func (c *Client) Link(ctx context.Context, oldname, newname string) error {
	a, err := c.walk(ctx, oldname, false)
	if err != nil {
		return pathErr("link", oldname, err)
	}
	p, base, err := c.parent(ctx, newname)
	if err == nil {
		err = c.mds(ctx, rpc.MLink, &rpc.LinkReq{Ino: a.Ino, NewParent: p, NewName: base}, &rpc.AttrResp{})
	}
	return pathErr("link", newname, err)
}

func (c *Client) setattr(ctx context.Context, op, name string, req rpc.SetattrReq) error {
	a, err := c.walk(ctx, name, true)
	if err == nil {
		req.Ino = a.Ino
		err = c.mds(ctx, rpc.MSetattr, &req, &rpc.AttrResp{})
	}
	return pathErr(op, name, err)
}

// Chmod changes the permission bits of name.
func (c *Client) Chmod(ctx context.Context, name string, perm uint32) error {
	return c.setattr(ctx, "chmod", name, rpc.SetattrReq{Valid: rpc.SetMode, Mode: perm & 0o7777})
}

// NoChange, as the uid or gid of Chown, leaves it as it is (chown(2)'s -1).
const NoChange = ^uint32(0)

// Chown changes the owner and group of name; either may be NoChange. Only
// root may give a file away; its owner may change its group to one of the
// owner's groups.
func (c *Client) Chown(ctx context.Context, name string, uid, gid uint32) error {
	req := rpc.SetattrReq{Uid: uid, Gid: gid}
	if uid != NoChange {
		req.Valid |= rpc.SetUid
	}
	if gid != NoChange {
		req.Valid |= rpc.SetGid
	}
	return c.setattr(ctx, "chown", name, req)
}

// Chtimes changes the access and modification times of name: its owner
// (or root) may.
func (c *Client) Chtimes(ctx context.Context, name string, atime, mtime time.Time) error {
	return c.setattr(ctx, "chtimes", name, rpc.SetattrReq{Valid: rpc.SetAtime | rpc.SetMtime, Atime: atime.UnixNano(), Mtime: mtime.UnixNano()})
}

// Touch sets the access and modification times of name to the MDS's
// current time (utimes(name, NULL)): anyone who may write it may.
func (c *Client) Touch(ctx context.Context, name string) error {
	return c.setattr(ctx, "touch", name, rpc.SetattrReq{Valid: rpc.SetAtime | rpc.SetMtime | rpc.SetAtimeNow | rpc.SetMtimeNow})
}

// Truncate changes the size of the file name.
func (c *Client) Truncate(ctx context.Context, name string, size int64) error {
	f, err := c.OpenFile(ctx, name, writeOnly, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SetXattr sets an extended attribute (flags rpc.XattrCreate, rpc.XattrReplace).
func (c *Client) SetXattr(ctx context.Context, name, attr string, value []byte, flags uint32) error {
	a, err := c.walk(ctx, name, true)
	if err == nil {
		err = c.mds(ctx, rpc.MSetXattr, &rpc.XattrReq{Ino: a.Ino, Name: attr, Value: value, Flags: flags}, &rpc.Empty{})
	}
	return pathErr("setxattr", name, err)
}

// GetXattr returns an extended attribute's value.
func (c *Client) GetXattr(ctx context.Context, name, attr string) ([]byte, error) {
	a, err := c.walk(ctx, name, true)
	if err != nil {
		return nil, pathErr("getxattr", name, err)
	}
	var r rpc.XattrResp
	err = c.mds(ctx, rpc.MGetXattr, &rpc.XattrReq{Ino: a.Ino, Name: attr}, &r)
	return r.Value, pathErr("getxattr", name, err)
}

// ListXattr returns the names of a file's extended attributes.
func (c *Client) ListXattr(ctx context.Context, name string) ([]string, error) {
	a, err := c.walk(ctx, name, true)
	if err != nil {
		return nil, pathErr("listxattr", name, err)
	}
	var r rpc.ListXattrResp
	err = c.mds(ctx, rpc.MListXattr, &rpc.XattrReq{Ino: a.Ino}, &r)
	return r.Names, pathErr("listxattr", name, err)
}

// RemoveXattr removes an extended attribute.
func (c *Client) RemoveXattr(ctx context.Context, name, attr string) error {
	a, err := c.walk(ctx, name, true)
	if err == nil {
		err = c.mds(ctx, rpc.MRemoveXattr, &rpc.XattrReq{Ino: a.Ino, Name: attr}, &rpc.Empty{})
	}
	return pathErr("removexattr", name, err)
}
