package fuse

import (
	"context"
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// fillAttr converts Strata attributes into the kernel's. st_blocks counts
// the size in 512-byte units (Strata does not track allocation; holes are
// counted as data), st_blksize is the preferred I/O size.
func fillAttr(out *gofuse.Attr, a *rpc.Attr, blksize uint32) {
	out.Ino = a.Ino
	out.Size = a.Size
	out.Blocks = (a.Size + 511) / 512
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Owner = gofuse.Owner{Uid: a.Uid, Gid: a.Gid}
	out.Atime, out.Atimensec = split(a.Atime)
	out.Mtime, out.Mtimensec = split(a.Mtime)
	out.Ctime, out.Ctimensec = split(a.Ctime)
	out.Blksize = blksize
	out.Rdev = a.Rdev
}

// split cuts unix nanoseconds into seconds and nanoseconds; times before
// 1970 show as 1970.
func split(ns int64) (uint64, uint32) {
	if ns < 0 {
		return 0, 0
	}
	return uint64(ns / 1e9), uint32(ns % 1e9)
}

// fileType returns the S_IFMT bits of a mode, as go-fuse keeps them.
func fileType(mode uint32) uint32 { return mode & syscall.S_IFMT }

// callerCred is the identity a request was made with; what it creates is
// owned by it.
func callerCred(ctx context.Context, def rpc.Cred) rpc.Cred {
	if c, ok := gofuse.FromContext(ctx); ok {
		return rpc.Cred{Uid: c.Uid, Gid: c.Gid}
	}
	return def
}

// as returns the mount's context acting for the caller of the FUSE request
// ctx: the MDS checks the call's permissions against that identity.
func (fsys *fileSystem) as(ctx context.Context) context.Context {
	return rpc.WithCred(fsys.ctx, callerCred(ctx, fsys.c.Cred()))
}
