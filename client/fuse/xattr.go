package fuse

import (
	"context"
	"slices"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Getxattr returns an extended attribute. user.strata.layout shows a
// file's layout or a directory's effective layout policy.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if errno := n.fsys.xa.answer(n.ino(), attr); errno != 0 {
		return 0, errno // known without asking the MDS (xattrcache.go)
	}
	v, err := n.fsys.c.GetXattrIno(n.fsys.as(ctx), n.ino(), attr)
	if err != nil {
		return 0, n.fsys.errs.fail("getxattr", n.ino(), err)
	}
	if len(v) > len(dest) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Setxattr sets an extended attribute. user.strata.layout on a directory
// sets the layout policy of what is created in it afterwards; on an empty
// file it places the file anew with that layout (EEXIST if the file has
// data, EINVAL for a malformed value, which leaves the file as it was).
// Data this mount buffered for the file is made durable first, so that
// the MDS judges "empty" on what the writers wrote.
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if unsupported(attr) {
		return syscall.EOPNOTSUPP
	}
	ino := n.ino()
	n.fsys.dc.changed() // the layout generation is an attribute
	n.fsys.da.forget(ino)
	n.fsys.xa.forget(ino)
	of := n.fsys.opened(ino)
	if attr == rpc.LayoutXattr && of != nil {
		if err := of.sync(); err != nil {
			return n.fsys.errs.fail("setxattr", ino, err)
		}
	}
	if err := n.fsys.c.SetXattrIno(n.fsys.as(ctx), ino, attr, data, flags); err != nil {
		if attr == rpc.LayoutXattr {
			// The kernel only passes the errno on; say why in the log.
			n.fsys.log.Info("layout xattr refused", "inode", ino, "value", string(data), "err", err)
		}
		return n.fsys.errs.fail("setxattr", ino, err)
	}
	n.fsys.xa.forget(ino) // again: a listing may have answered meanwhile
	if attr == rpc.LayoutXattr && of != nil {
		// The file has a new layout generation: reopen the shared file on it.
		if err := of.refresh(); err != nil {
			return n.fsys.errs.fail("setxattr", ino, err)
		}
	}
	return 0
}

// Listxattr lists the names of the extended attributes, NUL-terminated.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	names, err := n.fsys.c.ListXattrIno(n.fsys.as(ctx), n.ino())
	if err != nil {
		return 0, n.fsys.errs.fail("listxattr", n.ino(), err)
	}
	names = slices.DeleteFunc(names, unsupported) // set through the library
	size := 0
	for _, name := range names {
		size += len(name) + 1
	}
	if size > len(dest) {
		return uint32(size), syscall.ERANGE
	}
	off := 0
	for _, name := range names {
		off += copy(dest[off:], name)
		dest[off] = 0
		off++
	}
	return uint32(size), 0
}

// Removexattr removes an extended attribute (user.strata.layout only from
// a directory: a file always has a layout).
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	if unsupported(attr) {
		return syscall.EOPNOTSUPP
	}
	n.fsys.da.forget(n.ino())
	return n.fsys.errs.fail("removexattr", n.ino(), n.fsys.c.RemoveXattrIno(n.fsys.as(ctx), n.ino(), attr))
}
