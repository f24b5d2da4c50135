package fuse

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// fallocate(2) modes (linux/falloc.h).
const (
	fallocKeepSize  = unix.FALLOC_FL_KEEP_SIZE
	fallocPunchHole = unix.FALLOC_FL_PUNCH_HOLE
	fallocZeroRange = unix.FALLOC_FL_ZERO_RANGE
)

// Allocate implements fallocate(2):
//   - mode 0 extends the file to off+size if it is shorter, and
//     FALLOC_FL_KEEP_SIZE does not; both fail with ENOSPC, as Linux does,
//     if the namespace has not that much free space past the end of the
//     file. Strata allocates as data is written, so nothing is held back:
//     a later write may still find the data servers full.
//   - FALLOC_FL_PUNCH_HOLE (with FALLOC_FL_KEEP_SIZE, as Linux requires)
//     makes the range read as zeros and gives its space back to the data
//     servers (client.File.Punch).
//   - FALLOC_FL_ZERO_RANGE does the same and, without
//     FALLOC_FL_KEEP_SIZE, extends the file to the end of the range.
//
// Other modes (collapse, insert, unshare) are EOPNOTSUPP.
func (n *node) Allocate(ctx context.Context, fh fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok || !writable(h.flags) {
		return syscall.EBADF
	}
	end := off + size
	if end < off {
		return syscall.EFBIG
	}
	keep := mode&fallocKeepSize != 0
	var err error
	switch mode &^ fallocKeepSize {
	case 0:
		err = h.of.allocate(n.fsys.as(ctx), off, end, keep)
	case fallocPunchHole:
		if !keep {
			return syscall.EOPNOTSUPP
		}
		err = h.of.punch(off, end)
	case fallocZeroRange:
		err = h.of.punch(off, end)
		if err == nil && !keep && end > h.of.size() {
			err = h.of.truncate(end)
		}
	default:
		return syscall.EOPNOTSUPP
	}
	return n.fsys.errs.fail("fallocate", n.ino(), err)
}

// allocate answers fallocate(2) mode 0 (or FALLOC_FL_KEEP_SIZE) of
// [off, end): ENOSPC if the bytes past the file's end do not fit in the
// free space, else the file is extended to end unless keep.
func (of *openFile) allocate(ctx context.Context, off, end uint64, keep bool) error {
	size := of.size()
	if end <= size {
		return nil
	}
	st, err := of.fsys.c.StatFS(ctx)
	if err != nil {
		return err
	}
	if need := end - max(off, size); need > st.Free {
		return syscall.ENOSPC
	}
	if keep {
		return nil
	}
	return of.truncate(end)
}

// punch makes [off, end) read as zeros and releases its space, after the
// buffered writes are on the data servers.
func (of *openFile) punch(off, end uint64) error {
	if err := of.w.drain(); err != nil {
		return err
	}
	f, err := of.file(true)
	if err != nil {
		return err
	}
	err = f.Punch(int64(off), int64(end-off))
	of.ra.drop()
	of.fsys.dc.changed()
	return err
}
