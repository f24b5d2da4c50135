package fuse

import (
	"syscall"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Streaming past the page cache. Through the kernel's page cache, a large
// sequential read costs one copy per byte more than it must: the mount's
// reply is copied into the page cache, then from there into the reader's
// buffer; a write is copied from the writer into the page cache, then
// from there to the mount. An open with FOPEN_DIRECT_IO has the kernel
// copy straight between the process's buffer and the mount's. The mount
// chooses it per open, where the page cache would not be used again:
//
//   - An open for writing only (O_WRONLY: cp, dd, a shell's >, fopen "w")
//     of a file without setuid or setgid bit. What it writes is never
//     read back from the cache: the next open sees a new size or mtime
//     and drops the file's cached pages (node.restamp), and a write-only
//     descriptor can neither read nor map the file. (The kernel clears a
//     setuid or setgid bit at a write through the page cache, with a
//     setattr as the writer; a direct write leaves that to the server,
//     which does it at the close's commit: a file made setuid while
//     open for writing here keeps the bit until then.)
//   - An open for reading only of a file of at least Options.StreamMin
//     bytes that is new to this mount (not opened here before, or changed
//     since), while no other handle of the file is open here. Its first
//     read streams; a later open of the unchanged file goes through the
//     page cache and fills it, and the ones after it find the file there
//     (a file enters the cache on its second use, as in a 2Q cache). An
//     open while another is open shares the cache with it, so the ranks
//     of a job reading one input on a node read it once.
//
// Only where the kernel grants FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6): a
// shared mapping of such an open then works, through the page cache, and
// the kernel writes mapped dirty pages back before a direct read or write
// and drops the cached pages a direct write overwrites, so direct and
// cached opens of one file agree. An open with O_RDWR keeps the page
// cache: a program that reads what it wrote, or maps the file, gets it
// from memory.

// defaultStreamMin is Options.StreamMin's default.
const defaultStreamMin = 32 << 20

// openFlags are the FOPEN flags of an open of a regular file with the
// open(2) flags flags: FOPEN_DIRECT_IO on a DirectIO mount or where the
// open streams (above), FOPEN_KEEP_CACHE where the file is what it was at
// the last open here (same). a holds the file's attributes; shared
// reports that another handle of the file is open on this mount.
func (fsys *fileSystem) openFlags(flags uint32, a *rpc.Attr, same, shared bool) uint32 {
	var out uint32
	if same {
		out |= gofuse.FOPEN_KEEP_CACHE
	}
	if fsys.opts.DirectIO || fsys.streams(flags, a, same, shared) {
		out |= gofuse.FOPEN_DIRECT_IO
	}
	return out
}

// streams reports whether an open bypasses the page cache (above).
func (fsys *fileSystem) streams(flags uint32, a *rpc.Attr, same, shared bool) bool {
	if !fsys.directMmap.Load() || fsys.opts.StreamMin < 0 {
		return false
	}
	switch flags & syscall.O_ACCMODE {
	case syscall.O_WRONLY:
		return a.Mode&(syscall.S_ISUID|syscall.S_ISGID) == 0
	case syscall.O_RDONLY:
		return !same && !shared && a.Size >= uint64(fsys.opts.StreamMin)
	}
	return false
}

// shared reports whether a handle other than the caller's holds of.
func (fsys *fileSystem) shared(of *openFile) bool {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	return of.refs > 1
}
