package client

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// This file holds the inode-level namespace calls: the same operations as
// namespace.go, but naming a directory entry by (parent inode, name) and an
// object by its inode, as a kernel file system (FUSE) does. They resolve no
// path, so each is one MDS call. Errors are *fs.PathError naming the inode
// ("inode 12" or "inode 12/name") whose Err is the MDS's *rpc.Error.

func inoErr(op string, ino uint64, name string, err error) error {
	if err == nil {
		return nil
	}
	p := fmt.Sprintf("inode %d", ino)
	if name != "" {
		p += "/" + name
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// Cred returns the identity this client creates files as when a call does
// not name one.
func (c *Client) Cred() rpc.Cred { return c.cfg.Cred }

// Lookup returns the attributes of the entry name in directory parent.
func (c *Client) Lookup(ctx context.Context, parent uint64, name string) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MLookup, &rpc.EntryReq{Parent: parent, Name: name}, &r); err != nil {
		return nil, inoErr("lookup", parent, name, err)
	}
	return &r.Attr, nil
}

// Getattr returns the attributes of inode ino as the MDS has them (the
// size is the committed size: writes of open files count once synced).
func (c *Client) Getattr(ctx context.Context, ino uint64) (*rpc.Attr, error) {
	a, err := c.getattr(ctx, ino)
	if err != nil {
		return nil, inoErr("getattr", ino, "", err)
	}
	return a, nil
}

// Setattr changes the attributes of inode ino whose bit is set in
// req.Valid (req.Ino is ignored) and returns the new attributes. A size
// change truncates or extends the file's columns on the data servers
// first, through a File opened for it; to truncate a file this process
// has open, use that File's Truncate instead so its view of the size
// stays right.
func (c *Client) Setattr(ctx context.Context, ino uint64, req rpc.SetattrReq) (*rpc.Attr, error) {
	req.Ino = ino
	if req.Valid&rpc.SetSize != 0 {
		f, _, err := c.OpenIno(ctx, ino, os.O_WRONLY)
		if err != nil {
			return nil, err
		}
		err = f.Truncate(int64(req.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		req.Valid &^= rpc.SetSize
		if req.Valid == 0 {
			return c.Getattr(ctx, ino)
		}
	}
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MSetattr, &req, &r); err != nil {
		return nil, inoErr("setattr", ino, "", err)
	}
	return &r.Attr, nil
}

// CreateIno creates the regular file name in directory parent with
// permissions perm, owned by cred, with the layout the directory
// inherits. With excl an existing name fails with EEXIST; without it an
// existing regular file is returned and created is false.
func (c *Client) CreateIno(ctx context.Context, parent uint64, name string, perm uint32, cred rpc.Cred, excl bool) (attr *rpc.Attr, created bool, err error) {
	req := rpc.CreateReq{Parent: parent, Name: name, Mode: perm & 0o7777, Cred: cred, Exclusive: excl}
	r, err := c.create(ctx, &req)
	if err != nil {
		return nil, false, inoErr("create", parent, name, err)
	}
	return &r.Attr, r.Created, nil
}

// MkdirIno creates the directory name in directory parent.
func (c *Client) MkdirIno(ctx context.Context, parent uint64, name string, perm uint32, cred rpc.Cred) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MMkdir, &rpc.MkdirReq{Parent: parent, Name: name, Mode: perm & 0o7777, Cred: cred}, &r); err != nil {
		return nil, inoErr("mkdir", parent, name, err)
	}
	return &r.Attr, nil
}

// SymlinkIno creates name in directory parent as a symbolic link to target.
func (c *Client) SymlinkIno(ctx context.Context, parent uint64, name, target string, cred rpc.Cred) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MSymlink, &rpc.SymlinkReq{Parent: parent, Name: name, Target: target, Cred: cred}, &r); err != nil {
		return nil, inoErr("symlink", parent, name, err)
	}
	return &r.Attr, nil
}

// MknodIno creates name in directory parent as a special file owned by
// cred: mode holds the type bits and permissions, rdev a device node's
// device number (see Client.Mknod).
func (c *Client) MknodIno(ctx context.Context, parent uint64, name string, mode, rdev uint32, cred rpc.Cred) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MMknod, &rpc.MknodReq{Parent: parent, Name: name, Mode: mode, Rdev: rdev, Cred: cred}, &r); err != nil {
		return nil, inoErr("mknod", parent, name, err)
	}
	return &r.Attr, nil
}

// LinkIno adds newName in directory newParent as a hard link to inode ino
// and returns the inode's new attributes.
func (c *Client) LinkIno(ctx context.Context, ino, newParent uint64, newName string) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MLink, &rpc.LinkReq{Ino: ino, NewParent: newParent, NewName: newName}, &r); err != nil {
		return nil, inoErr("link", newParent, newName, err)
	}
	return &r.Attr, nil
}

// UnlinkIno removes the entry name (a file or symbolic link) from directory
// parent. The last link frees the inode and its data.
func (c *Client) UnlinkIno(ctx context.Context, parent uint64, name string) error {
	return inoErr("unlink", parent, name, c.mds(ctx, rpc.MUnlink, &rpc.EntryReq{Parent: parent, Name: name}, &rpc.Empty{}))
}

// RmdirIno removes the empty directory name from directory parent.
func (c *Client) RmdirIno(ctx context.Context, parent uint64, name string) error {
	return inoErr("rmdir", parent, name, c.mds(ctx, rpc.MRmdir, &rpc.EntryReq{Parent: parent, Name: name}, &rpc.Empty{}))
}

// RenameIno moves oldParent/oldName to newParent/newName with renameat2(2)
// semantics; flags are 0, rpc.RenameNoReplace or rpc.RenameExchange.
func (c *Client) RenameIno(ctx context.Context, oldParent uint64, oldName string, newParent uint64, newName string, flags uint32) error {
	req := rpc.RenameReq{OldParent: oldParent, OldName: oldName, NewParent: newParent, NewName: newName, Flags: flags}
	return inoErr("rename", oldParent, oldName, c.mds(ctx, rpc.MRename, &req, &rpc.Empty{}))
}

// ReadlinkIno returns the target of the symbolic link ino.
func (c *Client) ReadlinkIno(ctx context.Context, ino uint64) (string, error) {
	var r rpc.ReadlinkResp
	if err := c.mds(ctx, rpc.MReadlink, &rpc.InoReq{Ino: ino}, &r); err != nil {
		return "", inoErr("readlink", ino, "", err)
	}
	return r.Target, nil
}

// GetXattrIno returns the value of the extended attribute attr of inode
// ino. rpc.LayoutXattr shows a file's layout or a directory's effective
// policy.
func (c *Client) GetXattrIno(ctx context.Context, ino uint64, attr string) ([]byte, error) {
	var r rpc.XattrResp
	if err := c.mds(ctx, rpc.MGetXattr, &rpc.XattrReq{Ino: ino, Name: attr}, &r); err != nil {
		return nil, inoErr("getxattr", ino, "", err)
	}
	return r.Value, nil
}

// SetXattrIno sets the extended attribute attr of inode ino (flags
// rpc.XattrCreate, rpc.XattrReplace). rpc.LayoutXattr sets a directory's
// layout policy, or the layout of an empty file (EEXIST if it has data;
// EINVAL for a malformed value). A File open on ino must be refreshed
// after its layout changes.
func (c *Client) SetXattrIno(ctx context.Context, ino uint64, attr string, value []byte, flags uint32) error {
	req := rpc.XattrReq{Ino: ino, Name: attr, Value: value, Flags: flags}
	return inoErr("setxattr", ino, "", c.mds(ctx, rpc.MSetXattr, &req, &rpc.Empty{}))
}

// ListXattrIno returns the names of the extended attributes of inode ino.
func (c *Client) ListXattrIno(ctx context.Context, ino uint64) ([]string, error) {
	var r rpc.ListXattrResp
	if err := c.mds(ctx, rpc.MListXattr, &rpc.XattrReq{Ino: ino}, &r); err != nil {
		return nil, inoErr("listxattr", ino, "", err)
	}
	return r.Names, nil
}

// ReadDirPage lists at most limit entries (0: the MDS's page size) of
// directory ino that sort after the name after ("" for the start), in
// name order, with each child's attributes; more reports whether entries
// remain.
func (c *Client) ReadDirPage(ctx context.Context, ino uint64, after string, limit uint32) (ents []rpc.DirEntry, more bool, err error) {
	var r rpc.ReaddirResp
	if err := c.mds(ctx, rpc.MReaddir, &rpc.ReaddirReq{Ino: ino, After: after, Limit: limit}, &r); err != nil {
		return nil, false, inoErr("readdir", ino, "", err)
	}
	return r.Entries, r.More && len(r.Entries) > 0, nil
}

// RemoveXattrIno removes the extended attribute attr of inode ino.
func (c *Client) RemoveXattrIno(ctx context.Context, ino uint64, attr string) error {
	return inoErr("removexattr", ino, "", c.mds(ctx, rpc.MRemoveXattr, &rpc.XattrReq{Ino: ino, Name: attr}, &rpc.Empty{}))
}

// OpenIno opens the regular file ino with os.O_* flags (os.O_CREATE and
// os.O_EXCL are ignored: the inode exists) and returns it with the
// attributes it was opened with. As OpenFile it fetches fresh attributes
// and the layout (close-to-open), and with os.O_TRUNC on a writable open
// it truncates the file. The File does its I/O with ctx, so ctx must live
// as long as the File.
func (c *Client) OpenIno(ctx context.Context, ino uint64, flag int) (*File, *rpc.Attr, error) {
	return c.open(ctx, fmt.Sprintf("inode %d", ino), ino, flag, false)
}

// OpenCreatedIno is OpenIno of a file the caller just created (CreateIno
// said so): its owner may write it whatever its mode, as through the
// descriptor open(2) with O_CREAT returns.
func (c *Client) OpenCreatedIno(ctx context.Context, ino uint64, flag int) (*File, *rpc.Attr, error) {
	return c.open(ctx, fmt.Sprintf("inode %d", ino), ino, flag, true)
}

// refreshAttr is refresh returning the attributes the MDS sent with the
// layout. The size this handle knows only grows.
//
// A writer whose grant the MDS did not count (an inline file's) and whose
// file is on the data servers now asks again, to be counted (Count),
// before it has a layout to write there: a rebuild waits for it.
func (f *File) refreshAttr(ctx context.Context) (*rpc.Attr, error) {
	for {
		var r rpc.LayoutGetResp
		f.mu.Lock()
		again := f.view != nil // a refresh, not an open: returned once, at Close
		count := again && f.uncounted
		f.mu.Unlock()
		req := rpc.LayoutGetReq{Ino: f.ino, Write: f.writable(), Refresh: again, Created: f.created && !again, Job: f.tag.Job, Class: uint8(f.tag.Class), Inline: true, Count: count}
		if err := f.c.mds(ctx, rpc.MLayoutGet, &req, &r); err != nil {
			return nil, err
		}
		v, err := newView(&r)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if !again || count {
			f.uncounted = f.writable() && r.Uncounted
		}
		if f.uncounted && v.inline == nil {
			// The file left the MDS between the MDS's look and its
			// answer (for good: the next answer is counted).
			f.mu.Unlock()
			continue
		}
		f.view = v
		f.size = max(f.size, int64(r.Attr.Size))
		f.mu.Unlock()
		return &r.Attr, nil
	}
}

// Refresh fetches the file's layout, a fresh capability and its
// attributes again (what open does, for close-to-open) and returns the
// attributes. The size this handle knows only grows. Call it after the
// file's layout changed (rpc.LayoutXattr).
func (f *File) Refresh(ctx context.Context) (*rpc.Attr, error) {
	if _, err := f.current(); err != nil {
		return nil, err
	}
	a, err := f.refreshAttr(ctx)
	if err != nil {
		return nil, f.err("refresh", err)
	}
	return a, nil
}

// Writable reports whether the file was opened for writing.
func (f *File) Writable() bool { return f.writable() }
