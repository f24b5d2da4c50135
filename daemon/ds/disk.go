package ds

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
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
