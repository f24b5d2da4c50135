package fuse

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// node is one Strata inode in the kernel's tree. Its go-fuse node id is
// the Strata inode number (Options.ExternalNodeID): Strata never reuses
// inode numbers.
type node struct {
	fs.Inode
	fsys *fileSystem

	mu       sync.Mutex
	stamp    cacheStamp // what the file looked like at its last open here
	last     rpc.Attr   // the last attributes sent to the kernel
	openDirs int        // directory handles open on this node
}

// cacheStamp is what decides whether the kernel may keep a file's cached
// pages at open: the size, mtime and layout generation.
type cacheStamp struct {
	valid bool
	size  uint64
	mtime int64
	gen   uint64
}

var (
	_ fs.InodeEmbedder      = (*node)(nil)
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeReader         = (*node)(nil)
	_ fs.NodeWriter         = (*node)(nil)
	_ fs.NodeFlusher        = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeReleaser       = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeSymlinker      = (*node)(nil)
	_ fs.NodeReadlinker     = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
	_ fs.NodeGetxattrer     = (*node)(nil)
	_ fs.NodeSetxattrer     = (*node)(nil)
	_ fs.NodeListxattrer    = (*node)(nil)
	_ fs.NodeRemovexattrer  = (*node)(nil)
)

func (n *node) ino() uint64 { return n.StableAttr().Ino }

// child returns the kernel-tree inode for a, creating it if needed, and
// fills out.
func (n *node) child(ctx context.Context, a *rpc.Attr, out *gofuse.EntryOut) *fs.Inode {
	n.fsys.merge(a)
	fillAttr(&out.Attr, a, n.fsys.blksize())
	ch := n.NewInode(ctx, &node{fsys: n.fsys}, fs.StableAttr{Mode: fileType(a.Mode), Ino: a.Ino})
	if cn, ok := ch.Operations().(*node); ok {
		cn.remember(a)
	}
	return ch
}

// remember keeps the attributes last sent to the kernel.
func (n *node) remember(a *rpc.Attr) {
	n.mu.Lock()
	n.last = *a
	n.mu.Unlock()
}

// Lookup finds name in this directory.
func (n *node) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, left, known := n.fsys.dc.lookup(n.ino(), name)
	if known == unknown {
		if ready := n.fsys.dc.loading(n.ino()); ready != nil {
			select {
			case <-ready:
				a, left, known = n.fsys.dc.lookup(n.ino(), name)
			case <-ctx.Done(): // interrupted: ask the MDS
			}
		}
	}
	switch known {
	case absent:
		return nil, syscall.ENOENT
	case present:
		ch := n.child(ctx, a, out)
		out.SetEntryTimeout(min(left, n.fsys.opts.EntryTimeout))
		out.SetAttrTimeout(min(left, n.fsys.opts.AttrTimeout))
		return ch, 0
	}
	a, err := n.fsys.c.Lookup(n.fsys.as(ctx), n.ino(), name)
	if err == nil || errors.Is(err, syscall.ENOENT) {
		n.fsys.dc.asked(n.ino())
	}
	if err != nil {
		return nil, n.fsys.errs.fail("lookup", n.ino(), err)
	}
	return n.child(ctx, a, out), 0
}

// made records a name this directory gained through the mount (or, on
// err, that what became of it is unknown) for the listings, and returns
// err as an errno. The directory's attributes changed (to dir, if the
// MDS said); so did those of the inode named, whose new ones are a.
func (n *node) made(op, name string, a, dir *rpc.Attr, err error) syscall.Errno {
	n.fsys.dc.touch(n.ino())
	n.fsys.da.vouch(n.ino(), dir)
	if err != nil {
		n.fsys.dc.unsure(n.ino())
		return n.fsys.errs.fail(op, n.ino(), err)
	}
	n.fsys.dc.touch(a.Ino)
	n.fsys.dc.added(n.ino(), name, a)
	return 0
}

// gone records a name this directory lost through the mount (or, on err,
// that what became of it is unknown) for the listings, and returns err as
// an errno. The directory's attributes changed (to dir, if the MDS said),
// and those of the inode the name led to (its links), which the kernel's tree tells if it
// knows the name; if not, every listed attribute is stale.
func (n *node) gone(op, name string, ch *fs.Inode, dir *rpc.Attr, err error) syscall.Errno {
	n.fsys.dc.touch(n.ino())
	n.fsys.da.vouch(n.ino(), dir)
	if ch != nil {
		n.fsys.dc.touch(ch.StableAttr().Ino)
	} else {
		n.fsys.dc.changed()
	}
	if err != nil {
		n.fsys.dc.unsure(n.ino())
		return n.fsys.errs.fail(op, n.ino(), err)
	}
	n.fsys.dc.removed(n.ino(), name)
	return 0
}

// Getattr returns the attributes, with what this mount knows that the
// MDS does not yet (uncommitted size).
func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *gofuse.AttrOut) syscall.Errno {
	if h, ok := fh.(*handle); ok {
		if a, left, ok := h.of.cachedAttr(); ok { // openattr.go
			n.remember(a)
			fillAttr(&out.Attr, a, n.fsys.blksize())
			out.SetTimeout(left)
			return 0
		}
	}
	if a, left, ok := n.fsys.da.get(n.ino()); ok {
		n.remember(a)
		fillAttr(&out.Attr, a, n.fsys.blksize())
		out.SetTimeout(min(left, n.fsys.opts.AttrTimeout))
		return 0
	}
	a, err := n.fsys.getattr(n.ino())
	if err != nil && errors.Is(err, syscall.ENOENT) {
		// A directory removed (renamed over) while open here: fstat on
		// its descriptor still works, with no links.
		n.mu.Lock()
		if n.openDirs > 0 && n.last.Ino != 0 {
			last := n.last
			last.Nlink = 0
			a, err = &last, nil
		}
		n.mu.Unlock()
	}
	if err != nil {
		return n.fsys.errs.fail("getattr", n.ino(), err)
	}
	n.remember(a)
	fillAttr(&out.Attr, a, n.fsys.blksize())
	return 0
}

// Setattr changes mode, owner, times and size. A size change goes
// through the client, which cuts or extends the file's columns on the data
// servers before the MDS records it.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *gofuse.SetAttrIn, out *gofuse.AttrOut) syscall.Errno {
	ino := n.ino()
	var req rpc.SetattrReq
	if m, ok := in.GetMode(); ok {
		req.Valid |= rpc.SetMode
		req.Mode = m
	}
	if uid, ok := in.GetUID(); ok {
		req.Valid |= rpc.SetUid
		req.Uid = uid
	}
	if gid, ok := in.GetGID(); ok {
		req.Valid |= rpc.SetGid
		req.Gid = gid
	}
	if t, ok := in.GetATime(); ok {
		req.Valid |= rpc.SetAtime
		req.Atime = t.UnixNano()
		if in.Valid&gofuse.FATTR_ATIME_NOW != 0 {
			req.Valid |= rpc.SetAtimeNow
		}
	}
	if t, ok := in.GetMTime(); ok {
		req.Valid |= rpc.SetMtime
		req.Mtime = t.UnixNano()
		if in.Valid&gofuse.FATTR_MTIME_NOW != 0 {
			req.Valid |= rpc.SetMtimeNow
		}
	}
	n.fsys.dc.changed()
	n.fsys.da.forget(ino)
	if size, ok := in.GetSize(); ok {
		if err := n.truncate(ctx, fh, size); err != nil {
			return n.fsys.errs.fail("truncate", ino, err)
		}
	}
	var a *rpc.Attr
	var err error
	if req.Valid != 0 {
		a, err = n.fsys.c.Setattr(n.fsys.as(ctx), ino, req)
		if err == nil {
			n.fsys.merge(a)
		}
	} else {
		a, err = n.fsys.getattr(ino)
	}
	if err != nil {
		return n.fsys.errs.fail("setattr", ino, err)
	}
	fillAttr(&out.Attr, a, n.fsys.blksize())
	return 0
}

// truncate sets the size: through the shared File if the file is open on
// this mount (its buffered writes go first), else through the client.
func (n *node) truncate(ctx context.Context, fh fs.FileHandle, size uint64) error {
	if h, ok := fh.(*handle); ok {
		return h.of.truncate(size)
	}
	if of := n.fsys.opened(n.ino()); of != nil {
		return of.truncate(size)
	}
	_, err := n.fsys.c.Setattr(n.fsys.as(ctx), n.ino(), rpc.SetattrReq{Valid: rpc.SetSize, Size: size})
	return err
}

// Mkdir makes a directory owned by the caller.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, dir, err := n.fsys.c.MkdirInoPlus(n.fsys.as(ctx), n.ino(), name, mode&0o7777, callerCred(ctx, n.fsys.c.Cred()))
	if errno := n.made("mkdir", name, a, dir, err); errno != 0 {
		return nil, errno
	}
	return n.child(ctx, a, out), 0
}

// Rmdir removes an empty directory. A directory that holds only the
// silly names of files closed on this mount but not yet released is
// removed once they are (awaitSilly).
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	ch := n.GetChild(name)
	dir, err := n.fsys.c.RmdirInoPlus(n.fsys.as(ctx), n.ino(), name)
	if errors.Is(err, syscall.ENOTEMPTY) && ch != nil && n.fsys.awaitSilly(ctx, ch.StableAttr().Ino) {
		dir, err = n.fsys.c.RmdirInoPlus(n.fsys.as(ctx), n.ino(), name)
	}
	return n.gone("rmdir", name, ch, dir, err)
}

// Unlink removes a name. A file open on this mount whose name goes is
// moved to a silly name instead and removed at its last close, so that it
// stays readable and writable until then (as NFS does).
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	parent := n.ino()
	if ok, errno := n.sillyRename(name); ok {
		return errno
	}
	ch := n.GetChild(name)
	dir, err := n.fsys.c.UnlinkInoPlus(n.fsys.as(ctx), parent, name)
	return n.gone("unlink", name, ch, dir, err)
}

// sillyRename moves name aside if it is a file open on this mount, and
// reports whether it did (or tried and failed).
func (n *node) sillyRename(name string) (bool, syscall.Errno) {
	ch := n.GetChild(name)
	if ch == nil || ch.StableAttr().Mode != syscall.S_IFREG {
		return false, 0
	}
	of := n.fsys.opened(ch.StableAttr().Ino)
	if of == nil || of.hasSilly(n.ino(), name) {
		return false, 0
	}
	silly := n.fsys.sillyName(of.ino)
	n.fsys.da.forget(n.ino())
	n.fsys.dc.changed()
	n.fsys.dc.unsure(n.ino())
	err := n.fsys.c.RenameIno(n.fsys.ctx, n.ino(), name, n.ino(), silly, rpc.RenameNoReplace)
	if err != nil {
		return true, n.fsys.errs.fail("unlink", n.ino(), err)
	}
	of.addSilly(n.ino(), silly)
	return true, 0
}

// Rename moves a name, with renameat2 flags RENAME_NOREPLACE and
// RENAME_EXCHANGE. A file open on this mount that the rename would
// replace is moved to a silly name first, as for unlink.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^(rpc.RenameNoReplace|rpc.RenameExchange) != 0 {
		return syscall.EINVAL
	}
	n.fsys.dc.changed()
	n.fsys.dc.unsure(n.ino())
	n.fsys.dc.unsure(np.ino())
	n.fsys.da.forget(n.ino())
	n.fsys.da.forget(np.ino())
	if flags == 0 {
		if src, dst := n.GetChild(name), np.GetChild(newName); dst != nil && src != dst {
			if _, errno := np.sillyRename(newName); errno != 0 {
				return errno
			}
		}
	}
	err := n.fsys.c.RenameIno(n.fsys.as(ctx), n.ino(), name, np.ino(), newName, flags)
	return n.fsys.errs.fail("rename", n.ino(), err)
}

// Symlink makes a symbolic link owned by the caller.
func (n *node) Symlink(ctx context.Context, target, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := n.fsys.c.SymlinkIno(n.fsys.as(ctx), n.ino(), name, target, callerCred(ctx, n.fsys.c.Cred()))
	if errno := n.made("symlink", name, a, nil, err); errno != 0 {
		return nil, errno
	}
	return n.child(ctx, a, out), 0
}

// Readlink returns a symbolic link's target.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := n.fsys.c.ReadlinkIno(n.fsys.as(ctx), n.ino())
	if err != nil {
		return nil, n.fsys.errs.fail("readlink", n.ino(), err)
	}
	return []byte(t), 0
}

// Link adds a hard link to target in this directory.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino := target.EmbeddedInode().StableAttr().Ino
	a, err := n.fsys.c.LinkIno(n.fsys.as(ctx), ino, n.ino(), name)
	if errno := n.made("link", name, a, nil, err); errno != 0 {
		return nil, errno
	}
	return n.child(ctx, a, out), 0
}

// Mknod makes a special file (FIFO, device node, socket) owned by the
// caller; the kernel opens FIFOs and devices and binds sockets itself. A
// regular file (mknod(2) of S_IFREG, or of no type) is an exclusive
// create; the kernel has applied the umask to mode.
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var a *rpc.Attr
	var err error
	if t := fileType(mode); t == 0 || t == rpc.TypeFile {
		a, _, err = n.fsys.c.CreateIno(n.fsys.as(ctx), n.ino(), name, mode&0o7777, callerCred(ctx, n.fsys.c.Cred()), true)
	} else {
		a, err = n.fsys.c.MknodIno(n.fsys.as(ctx), n.ino(), name, mode, dev, callerCred(ctx, n.fsys.c.Cred()))
	}
	if errno := n.made("mknod", name, a, nil, err); errno != 0 {
		return nil, errno
	}
	return n.child(ctx, a, out), 0
}

// Statfs reports the namespace's capacity and free space. Inodes are not
// limited; the free count shown is a large constant.
func (n *node) Statfs(ctx context.Context, out *gofuse.StatfsOut) syscall.Errno {
	st, err := n.fsys.c.StatFS(n.fsys.as(ctx))
	if err != nil {
		return n.fsys.errs.fail("statfs", n.ino(), err)
	}
	const frsize, freeInodes = 4096, 1 << 32
	out.Bsize = n.fsys.blksize()
	out.Frsize = frsize
	out.Blocks = st.Capacity / frsize
	out.Bfree = st.Free / frsize
	out.Bavail = st.Free / frsize
	out.Files = st.Files + freeInodes
	out.Ffree = freeInodes
	out.NameLen = 255
	return 0
}
