package fuse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

var _ fs.NodeTmpfiler = (*node)(nil)

// tmpPrefix starts the hidden names of O_TMPFILE files.
const tmpPrefix = sillyPrefix + "tmp-"

// Tmpfile answers open(2) with O_TMPFILE: a regular file with no name,
// owned by the caller, that linkat(2) (of /proc/self/fd/N, or of the
// descriptor with AT_EMPTY_PATH) can give a name, and that is removed at
// its last close if nothing did.
//
// The MDS removes an inode at its last link, so the file is made under a
// hidden name in this directory, as a file unlinked while open is kept
// (the silly names of Unlink): the name is removed at the last close, and
// the mount answers as if it were not there (st_nlink counts the other
// links only, 0 until linkat) and leaves the name out of its listings
// (hidden). Other mounts see it with `ls -a`, as a silly name, and a mount
// that dies leaves it behind. The kernel refuses linkat of a
// file opened with O_TMPFILE|O_EXCL itself.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	parent := n.ino()
	n.fsys.dc.changed()
	n.fsys.dc.unsure(parent)
	n.fsys.da.forget(parent)
	name := fmt.Sprintf("%s%016x", tmpPrefix, rand.Uint64()) // unique across the mounts of the namespace
	a, _, err := n.fsys.c.CreateIno(n.fsys.as(ctx), parent, name, mode&0o7777, callerCred(ctx, n.fsys.c.Cred()), true)
	if err != nil {
		return nil, nil, 0, n.fsys.errs.fail("tmpfile", parent, err)
	}
	of := n.fsys.acquire(a.Ino)
	of.setTag(n.fsys.tagOf(ctx))
	of.setCreated(a)
	of.addSilly(parent, name)
	ch := n.child(ctx, a, out)
	ch.Operations().(*node).restamp(a)
	return ch, &handle{of: of, flags: flags}, n.fsys.openFlags(flags, a, false, n.fsys.shared(of)), 0
}

// hidden reports whether a listing of directory parent leaves e out: the
// hidden name of an O_TMPFILE file open on this mount.
func (fsys *fileSystem) hidden(parent uint64, e *rpc.DirEntry) bool {
	if !strings.HasPrefix(e.Name, tmpPrefix) {
		return false
	}
	of := fsys.opened(e.Attr.Ino)
	return of != nil && of.hasSilly(parent, e.Name)
}
