package ds

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// Direct writes of staged copies: a rebuild writes each window of a
// component once and reads none of it back before the component is
// published, so the page cache gains nothing from holding its bytes, and
// copying them there costs the target most of its CPU (the kernel's copy
// and the pages' writeback). A staged copy's data file is therefore also
// opened with O_DIRECT, and a window's bytes that are aligned for it go
// from the window's buffer to the disk. Everything else (the last window of
// a component that ends inside a disk block, a file system without
// O_DIRECT, any write O_DIRECT refuses, and all reads, truncates and
// syncs) uses the ordinary descriptor: both name one file, which the
// kernel keeps coherent. Durability is the commit's fsync, as before.

// directAlign is the alignment of O_DIRECT offsets, lengths and buffers
// that every Linux file system and disk accepts.
const directAlign = 4096

// directFile is a staged copy's data File with a second, O_DIRECT
// descriptor for aligned writes. It is safe for concurrent use as File is.
type directFile struct {
	File
	direct File
}

var _ File = (*directFile)(nil)

// withDirect returns f with an O_DIRECT descriptor of name for its aligned
// writes, or f itself where name cannot be opened so.
func withDirect(d Disk, f File, name string) File {
	direct, err := d.OpenFile(name, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return f
	}
	return &directFile{File: f, direct: direct}
}

// WriteAt writes p at off through the O_DIRECT descriptor if off, len(p)
// and p's address are aligned for it, else (or if it refuses) through the
// ordinary one.
func (f *directFile) WriteAt(p []byte, off int64) (int, error) {
	if len(p) > 0 && off%directAlign == 0 && len(p)%directAlign == 0 && uintptr(unsafe.Pointer(&p[0]))%directAlign == 0 {
		n, err := f.direct.WriteAt(p, off)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return n, err
		}
	}
	return f.File.WriteAt(p, off)
}

// SyscallConn is the ordinary descriptor's (hole punching, writeback).
func (f *directFile) SyscallConn() (syscall.RawConn, error) {
	sc, ok := f.File.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// Close closes both descriptors.
func (f *directFile) Close() error {
	err := f.direct.Close()
	if cerr := f.File.Close(); cerr != nil {
		err = cerr
	}
	return err
}
