package fuse

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// handle is one open of a file (one FUSE file handle). Handles of one
// inode share its openFile.
type handle struct {
	of    *openFile
	flags uint32 // open(2) flags

	mu     sync.Mutex
	owners map[uint64]bool // lock owners that locked through this handle
}

func writable(flags uint32) bool { return flags&syscall.O_ACCMODE != syscall.O_RDONLY }

// Open opens a file: fresh attributes and layout from the MDS
// (close-to-open); the kernel keeps its cached pages only if the file's
// size, mtime and layout are what they were at the last open here, and
// bypasses them where the open streams (stream.go).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ino := n.ino()
	of := n.fsys.acquire(ino)
	of.setTag(n.fsys.tagOf(ctx))
	a, err := of.open(n.fsys.as(ctx), writable(flags), true)
	if err == nil && flags&syscall.O_TRUNC != 0 && writable(flags) && a.Size > 0 {
		err = of.truncate(0)
		a.Size = 0
	}
	if err != nil {
		_ = n.fsys.release(of)
		return nil, 0, n.fsys.errs.fail("open", ino, err)
	}
	fuseFlags := n.fsys.openFlags(flags, a, n.restamp(a), n.fsys.shared(of))
	return &handle{of: of, flags: flags}, fuseFlags, 0
}

// restamp records a's stamp and reports whether it is the same as at the
// last open.
func (n *node) restamp(a *rpc.Attr) bool {
	s := cacheStamp{valid: true, size: a.Size, mtime: a.Mtime, gen: a.Gen}
	n.mu.Lock()
	defer n.mu.Unlock()
	same := n.stamp == s
	n.stamp = s
	return same
}

// Create creates (or, racing another creator without O_EXCL, opens) a
// file owned by the caller, with the layout its directory inherits, in
// one MDS call. A create that truncates (O_TRUNC: shell redirections, cp,
// a program writing a file whole) is opened for writing by that call too
// (layout, capability, quota room), for the data that follows; another
// fetches the layout at its first read or write, so a create that writes
// nothing (touch, a lock file) costs that one call.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *gofuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	parent := n.ino()
	tag := n.fsys.tagOf(ctx)
	open := writable(flags) && flags&syscall.O_TRUNC != 0
	cr, err := n.fsys.c.CreateInoPlus(client.WithTag(n.fsys.as(ctx), tag), parent, name, mode&0o7777, callerCred(ctx, n.fsys.c.Cred()), flags&syscall.O_EXCL != 0, open)
	var a, dir *rpc.Attr
	created := false
	if err == nil {
		a, dir, created = cr.Attr, cr.Dir, cr.Created
	}
	if errno := n.made("create", name, a, dir, err); errno != 0 {
		return nil, nil, 0, errno
	}
	of := n.fsys.acquire(a.Ino)
	of.setTag(tag)
	switch {
	case cr.File != nil && of.adopt(cr):
		if flags&syscall.O_TRUNC != 0 && a.Size > 0 {
			err = of.truncate(0)
			a.Size = 0
		}
		if err != nil {
			_ = n.fsys.release(of)
			return nil, nil, 0, n.fsys.errs.fail("create", parent, err)
		}
	case created:
		if cr.File != nil {
			_ = cr.File.Close() // returns the write grant
		}
		of.setCreated(a)
	default:
		if cr.File != nil {
			_ = cr.File.Close()
		}
		a, err = of.open(n.fsys.as(ctx), writable(flags), true)
		if err == nil && flags&syscall.O_TRUNC != 0 && writable(flags) && a.Size > 0 {
			err = of.truncate(0)
			a.Size = 0
		}
		if err != nil {
			_ = n.fsys.release(of)
			return nil, nil, 0, n.fsys.errs.fail("create", parent, err)
		}
	}
	ch := n.child(ctx, a, out)
	ch.Operations().(*node).restamp(a)
	return ch, &handle{of: of, flags: flags}, n.fsys.openFlags(flags, a, false, n.fsys.shared(of)), 0
}

// Read reads from the shared file, after this mount's buffered writes.
func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (gofuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*handle)
	if !ok {
		return nil, syscall.EBADF
	}
	got, err := h.of.read(h, dest, off)
	if err != nil {
		return nil, n.fsys.errs.fail("read", n.ino(), err)
	}
	return got, 0
}

// Write gathers data into the write-behind buffer. The kernel gives the
// offset (for O_APPEND, its idea of the end of the file: appends of the
// processes of one mount are serialized by the kernel).
func (n *node) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, ok := fh.(*handle)
	if !ok || !writable(h.flags) {
		return 0, syscall.EBADF
	}
	if err := h.of.write(data, off); err != nil {
		return 0, n.fsys.errs.fail("write", n.ino(), err)
	}
	return uint32(len(data)), 0
}

// Flush runs at every close(2): buffered writes go to the data servers,
// are made durable and the size is published, so that an open on another
// mount sees them (close-to-open).
func (n *node) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok {
		return 0
	}
	return n.fsys.errs.fail("flush", n.ino(), h.of.sync())
}

// Fsync is Flush on demand. A directory's fsync has nothing to do: the
// MDS commits every change before it answers.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok {
		return 0
	}
	return n.fsys.errs.fail("fsync", n.ino(), h.of.sync())
}

// Release runs when the last descriptor of an open is closed; the last
// release of the inode on this mount closes the shared file.
func (n *node) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok {
		return 0
	}
	// OFD locks belong to the open file; POSIX ones went at flush.
	h.mu.Lock()
	owners := h.owners
	h.owners = nil
	h.mu.Unlock()
	for o := range owners {
		n.fsys.dropLocks(h.of.ino, o)
	}
	h.of.ra.forget(h)
	return n.fsys.errs.fail("release", n.ino(), n.fsys.release(h.of))
}
