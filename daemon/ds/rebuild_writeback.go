package ds

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Early writeback of staged copies: a rebuild writes a component once,
// sequentially, and makes it durable once, when it is published
// (stage.go). Left to the kernel, its dirty pages wait in the page cache
// until that fsync (or the kernel's background threshold, gigabytes away),
// so the disk idles while the copy runs and the fsync then writes the
// whole component while the copy waits. startWriteback has the kernel
// start writing each window as soon as it is in the page cache, so that
// the disk works while the next windows are read and decoded, and the
// final fsync finds little left to write.

// startWriteback starts writing the n bytes of f at off to disk, without
// waiting for them (sync_file_range(2) SYNC_FILE_RANGE_WRITE). It is
// advisory and durability does not depend on it: the commit that follows
// (fsync) writes what it did not and reports any error. A File without a
// descriptor is left alone.
func startWriteback(f File, off, n int64) {
	sc, ok := f.(syscall.Conn)
	if !ok || n <= 0 {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
