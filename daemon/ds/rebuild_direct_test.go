package ds

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDirectFile: a staged copy's data file written through its O_DIRECT
// descriptor where a write is aligned for it and through the ordinary one
// where it is not (an unaligned length, offset or buffer) reads back byte
// for byte, as does one whose O_DIRECT descriptor refuses a write or
// could not be opened.
func TestDirectFile(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		disk Disk
		want bool // the file has an O_DIRECT descriptor
	}{
		{"direct", OSDisk{}, true},
		{"refused", refuseDisk{OSDisk{}}, true},
		{"none", noDirectDisk{OSDisk{}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "c"+stageSuffix)
			plain, err := c.disk.OpenFile(name, os.O_RDWR|os.O_CREATE, fileMode)
			if err != nil {
				t.Fatal(err)
			}
			f := withDirect(c.disk, plain, name)
			defer f.Close()
			if _, ok := f.(*directFile); ok != c.want {
				if c.name == "direct" {
					t.Skipf("the file system of %s does not open files with O_DIRECT", name)
				}
				t.Fatalf("O_DIRECT descriptor: %v, want %v", ok, c.want)
			}
			buf := getWindowBuf(256 << 10)
			defer putWindowBuf(buf)
			model := make([]byte, 0, 1<<20)
			write := func(p []byte, off int) {
				t.Helper()
				copy(p, randBytes(r, len(p)))
				if n, err := f.WriteAt(p, int64(off)); n != len(p) || err != nil {
					t.Fatalf("write of %d bytes at %d: %d, %v", len(p), off, n, err)
				}
				if end := off + len(p); end > len(model) {
					model = model[:end]
				}
				copy(model[off:], p)
			}
			b := *buf
			write(b[:128<<10], 0)         // aligned
			write(b[:64<<10], 64<<10)     // aligned, over part of the first
			write(b[1:4097], 128<<10)     // a buffer not aligned
			write(b[:8192], 132<<10+512)  // an offset not aligned
			write(b[:100<<10+7], 256<<10) // a length not aligned
			write(b[:256<<10], 512<<10)   // aligned, past a hole
			write(b[:4096], 144<<10)      // aligned, into the hole
			got := make([]byte, len(model)+10)
			n, err := f.ReadAt(got, 0)
			if !errors.Is(err, io.EOF) || n != len(model) {
				t.Fatalf("read back %d bytes, %v; want %d and EOF", n, err, len(model))
			}
			if !bytes.Equal(got[:n], model) {
				t.Fatalf("read back: %s", diff(got[:n], model))
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// refuseDisk opens O_DIRECT descriptors whose writes fail with EINVAL,
// as a file system with stricter alignment would.
type refuseDisk struct{ OSDisk }

func (d refuseDisk) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := d.OSDisk.OpenFile(name, flag, perm)
	if err != nil || flag&syscall.O_DIRECT == 0 {
		return f, err
	}
	return refuseFile{f}, nil
}

type refuseFile struct{ File }

func (refuseFile) WriteAt([]byte, int64) (int, error) { return 0, syscall.EINVAL }

// noDirectDisk cannot open files with O_DIRECT, as tmpfs on older kernels.
type noDirectDisk struct{ OSDisk }

func (d noDirectDisk) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&syscall.O_DIRECT != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EINVAL}
	}
	return d.OSDisk.OpenFile(name, flag, perm)
}
