package fuse

import (
	"context"
	"math"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Byte-range locks (fcntl F_SETLK/F_SETLKW/F_GETLK, OFD locks and
// flock(2), which arrives as a whole-file lock with FUSE_LK_FLOCK) live in
// the MDS lock table, so they hold across mounts and nodes. The owner the
// kernel names (a process's file table for POSIX locks, an open file for
// OFD and flock locks) is combined by the client with its lock session.
//
// The kernel does not send an unlock when a POSIX lock's owner closes the
// file: it names the owner in FLUSH, and the flock owner in RELEASE. The
// rawFS wrapper catches both and drops the owner's locks.

var (
	_ fs.FileGetlker  = (*handle)(nil)
	_ fs.FileSetlker  = (*handle)(nil)
	_ fs.FileSetlkwer = (*handle)(nil)
)

// lockKey is a lock owner on an inode.
type lockKey struct{ ino, owner uint64 }

// offsetMax is the kernel's OFFSET_MAX: a lock to the end of the file.
const offsetMax = math.MaxInt64

func toLock(lk *gofuse.FileLock, owner uint64, flags uint32) rpc.Lock {
	end := lk.End
	if end >= offsetMax {
		end = rpc.LockEOF
	}
	return rpc.Lock{Start: lk.Start, End: end, Type: lk.Typ, Owner: owner, Pid: lk.Pid, Flock: flags&gofuse.LK_FLOCK != 0}
}

func fromLock(l rpc.Lock, out *gofuse.FileLock) {
	out.Start = min(l.Start, offsetMax)
	out.End = min(l.End, offsetMax)
	out.Typ = l.Type
	out.Pid = l.Pid
}

// Getlk reports a lock that would conflict with lk (F_GETLK), or F_UNLCK.
func (h *handle) Getlk(ctx context.Context, owner uint64, lk *gofuse.FileLock, flags uint32, out *gofuse.FileLock) syscall.Errno {
	fsys := h.of.fsys
	l, err := fsys.c.GetLock(fsys.as(ctx), h.of.ino, toLock(lk, owner, flags))
	if err != nil {
		return fsys.errs.fail("getlk", h.of.ino, err)
	}
	fromLock(l, out)
	return 0
}

// Setlk takes, changes or drops a lock; a conflict is EAGAIN.
func (h *handle) Setlk(ctx context.Context, owner uint64, lk *gofuse.FileLock, flags uint32) syscall.Errno {
	return h.setlk(ctx, owner, lk, flags, false)
}

// Setlkw is Setlk that waits for a conflicting lock to go; a signal to
// the waiting process ends the wait with EINTR.
func (h *handle) Setlkw(ctx context.Context, owner uint64, lk *gofuse.FileLock, flags uint32) syscall.Errno {
	return h.setlk(ctx, owner, lk, flags, true)
}

func (h *handle) setlk(ctx context.Context, owner uint64, lk *gofuse.FileLock, flags uint32, wait bool) syscall.Errno {
	fsys, ino := h.of.fsys, h.of.ino
	l := toLock(lk, owner, flags)
	callCtx := fsys.as(ctx)
	if wait {
		// The wait ends with the request (interrupted) or the mount.
		c, cancel := context.WithCancel(fsys.as(ctx))
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		callCtx = c
	}
	if l.Type != syscall.F_UNLCK {
		fsys.noteLock(ino, owner)
		h.mu.Lock()
		if h.owners == nil {
			h.owners = map[uint64]bool{}
		}
		h.owners[owner] = true
		h.mu.Unlock()
	}
	if err := fsys.c.SetLock(callCtx, ino, l, wait); err != nil {
		return fsys.errs.fail("setlk", ino, err)
	}
	return 0
}

// noteLock records that owner may hold locks on ino, so that its close
// drops them.
func (fsys *fileSystem) noteLock(ino, owner uint64) {
	fsys.mu.Lock()
	fsys.locks[lockKey{ino, owner}] = true
	fsys.mu.Unlock()
}

// dropLocks releases every lock owner holds on ino, if it took any on this
// mount.
func (fsys *fileSystem) dropLocks(ino, owner uint64) {
	k := lockKey{ino, owner}
	fsys.mu.Lock()
	held := fsys.locks[k]
	delete(fsys.locks, k)
	fsys.mu.Unlock()
	if !held {
		return
	}
	if err := fsys.c.ReleaseLocks(fsys.ctx, ino, owner); err != nil {
		fsys.errs.fail("release locks", ino, err)
	}
}

// rawFS wraps go-fuse's node file system to drop locks at close: FLUSH
// names the POSIX lock owner that closes, RELEASE with
// FUSE_RELEASE_FLOCK_UNLOCK the flock owner. Node ids are Strata inode
// numbers (ExternalNodeID).
type rawFS struct {
	gofuse.RawFileSystem
	fsys *fileSystem
}

// Flush writes back (through the node), then drops the closer's locks.
func (r *rawFS) Flush(cancel <-chan struct{}, in *gofuse.FlushIn) gofuse.Status {
	st := r.RawFileSystem.Flush(cancel, in)
	r.fsys.dropLocks(in.NodeId, in.LockOwner)
	return st
}

// Release closes the handle (through the node), then drops its flock
// locks.
func (r *rawFS) Release(cancel <-chan struct{}, in *gofuse.ReleaseIn) {
	r.RawFileSystem.Release(cancel, in)
	if in.ReleaseFlags&gofuse.FUSE_RELEASE_FLOCK_UNLOCK != 0 {
		r.fsys.dropLocks(in.NodeId, in.LockOwner)
	}
}
