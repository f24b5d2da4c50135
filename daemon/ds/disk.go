package ds

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Disk is the data server's access to its local file system. It is the
// seam where tests inject EIO, torn writes and latency. It has more than
// the usual three methods because a store needs files, directories and
// free space; each method is the os function of the same name.
type Disk interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	MkdirAll(name string, perm fs.FileMode) error
	Chmod(name string, mode fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	// Statfs returns the total and available bytes of the file system
	// holding name.
	Statfs(name string) (total, avail uint64, err error)
}

// File is an open file of a Disk. *os.File implements it. ReadAt and
// WriteAt may be called concurrently on disjoint ranges.
type File interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
}

// OSDisk is the Disk of the operating system.
type OSDisk struct{}

var (
	_ Disk = OSDisk{}
	_ File = (*os.File)(nil)
)

// OpenFile opens name with os.OpenFile.
func (OSDisk) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

// Remove removes name with os.Remove.
func (OSDisk) Remove(name string) error { return os.Remove(name) }

// Rename renames with os.Rename.
func (OSDisk) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// MkdirAll creates name and its parents with os.MkdirAll.
func (OSDisk) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// Chmod sets the mode of name with os.Chmod.
func (OSDisk) Chmod(name string, mode fs.FileMode) error { return os.Chmod(name, mode) }

// ReadDir lists name with os.ReadDir.
func (OSDisk) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Statfs returns the total and available bytes of the file system holding
// name, as statfs(2) reports them to an unprivileged user.
func (OSDisk) Statfs(name string) (total, avail uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(name, &st); err != nil {
		return 0, 0, &fs.PathError{Op: "statfs", Path: name, Err: err}
	}
	bs := uint64(st.Bsize)
	if bs == 0 {
		return 0, 0, fmt.Errorf("statfs %s: zero block size", name)
	}
	return st.Blocks * bs, st.Bavail * bs, nil
}

// allocated returns the bytes of disk f's blocks take: less than its size
// where it has holes.
func allocated(f File) (uint64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return allocatedInfo(info), nil
}

// allocatedInfo returns the bytes of disk a file's blocks take (st_blocks),
// or its size where the file system does not say.
func allocatedInfo(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(max(info.Size(), 0))
}

// punchHole deallocates n bytes of f at off, keeping its size
// (fallocate(2) FALLOC_FL_PUNCH_HOLE): the range reads as zeros and holds
// no blocks. A File without a descriptor, or a file system that cannot
// punch, gets zeros written instead: the range reads the same.
func punchHole(f File, off, n int64) error {
	if sc, ok := f.(syscall.Conn); ok {
		rc, err := sc.SyscallConn()
		if err == nil {
			var perr error
			err = rc.Control(func(fd uintptr) {
				perr = unix.Fallocate(int(fd), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
			})
			if err == nil && perr == nil {
				return nil
			}
			if err == nil && !errors.Is(perr, syscall.EOPNOTSUPP) {
				return &fs.PathError{Op: "fallocate", Err: perr}
			}
		}
	}
	zero := make([]byte, min(n, 1<<20))
	for n > 0 {
		k := min(n, int64(len(zero)))
		if _, err := f.WriteAt(zero[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}
