package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/qos"
)

const writeOnly = os.O_WRONLY

// File is an open Strata file. ReadAt and WriteAt may be called
// concurrently (writers to disjoint ranges are correct); Read, Write and
// Seek share one offset.
type File struct {
	c    *Client
	ctx  context.Context
	name string
	flag int
	ino  uint64
	// created: this handle's open made the file (rpc.LayoutGetReq.Created)
	created bool
	tag     qos.Tag // QoS tag asked for at every LAYOUTGET

	mu     sync.Mutex   // guards the fields below
	view   *view        // layout and token; replaced on refresh
	size   int64        // size as this handle knows it
	dirty  map[int]bool // components written since the last Sync
	fault  func(Fault)  // see SetFaultHandler
	end    int64        // largest end written since the last Sync
	pos    int64
	closed bool
	// uncounted: the MDS did not count this File's write grant (an
	// inline file's, rpc.LayoutGetResp.Uncounted): nothing to return.
	uncounted bool
}

// view is a file's layout and capability, immutable once built.
type view struct {
	lay   layout.Layout
	addrs []string // of each component
	tok   capability.Token
	codec *layout.Codec // rs:K+M only
	stale map[int]bool  // components not to read or write (layouterror.go)
	// inline is the content of an inline file (inline.go); nil: the
	// bytes are on the data servers.
	inline *inlineView
}

// Open opens name for reading.
func (c *Client) Open(ctx context.Context, name string) (*File, error) {
	return c.OpenFile(ctx, name, os.O_RDONLY, 0)
}

// Create creates or truncates name for reading and writing.
func (c *Client) Create(ctx context.Context, name string) (*File, error) {
	return c.OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenFile opens name with os.O_* flags; with os.O_CREATE a missing file is
// created with permissions perm and the layout its directory inherits.
func (c *Client) OpenFile(ctx context.Context, name string, flag int, perm uint32) (*File, error) {
	return c.OpenFileLayout(ctx, name, flag, perm, "")
}

// OpenFileLayout is OpenFile where a file it creates gets the layout spec
// (a layout string; "" inherits).
func (c *Client) OpenFileLayout(ctx context.Context, name string, flag int, perm uint32, spec string) (*File, error) {
	name = clean(name)
	var ino uint64
	created := false
	if flag&os.O_CREATE != 0 {
		p, base, err := c.parent(ctx, name)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		req := rpc.CreateReq{Parent: p, Name: base, Mode: perm & 0o7777, Cred: c.cfg.Cred, Exclusive: flag&os.O_EXCL != 0, Layout: spec, Inline: true}
		r, err := c.create(ctx, &req)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		ino, created = r.Attr.Ino, r.Created
	} else {
		a, err := c.walk(ctx, name, true)
		if err != nil {
			return nil, pathErr("open", name, err)
		}
		if a.IsDir() {
			return nil, pathErr("open", name, rpc.Errorf(syscall.EISDIR, "is a directory: "+name))
		}
		ino = a.Ino
	}
	f, _, err := c.open(ctx, name, ino, flag, created)
	return f, err
}

// open makes the handle of inode ino, the one constructor of File: a
// LAYOUTGET (fresh layout, capability and attributes: close-to-open), then
// O_TRUNC. It returns the attributes the file was opened with.
// created says this client just made the file (its owner may write it
// whatever the mode, as open(2) with O_CREAT).
func (c *Client) open(ctx context.Context, name string, ino uint64, flag int, created bool) (*File, *rpc.Attr, error) {
	f := &File{c: c, ctx: ctx, name: name, flag: flag &^ (os.O_CREATE | os.O_EXCL), ino: ino, dirty: map[int]bool{}, created: created, tag: c.tagFor(ctx)}
	a, err := f.refreshAttr(ctx)
	if err != nil {
		return nil, nil, pathErr("open", name, err)
	}
	if flag&os.O_TRUNC != 0 && f.writable() && f.size > 0 {
		if err := f.Truncate(0); err != nil {
			return nil, nil, err
		}
		a.Size = 0
	}
	return f, a, nil
}

func (f *File) writable() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// refresh fetches the layout, a fresh capability and the size (LAYOUTGET).
func (f *File) refresh(ctx context.Context) error {
	_, err := f.refreshAttr(ctx)
	return err
}

func newView(r *rpc.LayoutGetResp) (*view, error) {
	p, err := layout.Parse(r.Layout.Spec)
	if err != nil {
		return nil, fmt.Errorf("layout from mds: %w", err)
	}
	l := layout.Layout{Width: p.Width, Unit: p.Unit, Scheme: p.Scheme, Generation: r.Layout.Generation, Targets: r.Layout.Targets}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("layout from mds: %w", err)
	}
	if len(r.Layout.Addrs) != l.Components() {
		return nil, fmt.Errorf("layout from mds: %d addresses for %d components of %s", len(r.Layout.Addrs), l.Components(), l)
	}
	v := &view{lay: l, addrs: r.Layout.Addrs, tok: r.Cap, stale: staleSet(r)}
	if v.inline, err = inlineOf(r); err != nil {
		return nil, err
	}
	if l.Scheme.Kind == layout.KindRS {
		if v.codec, err = l.Codec(); err != nil {
			return nil, fmt.Errorf("layout from mds: %w", err)
		}
	}
	return v, nil
}

// current returns the view, or an error if the file is closed.
func (f *File) current() (*view, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, os.ErrClosed
	}
	return f.view, nil
}

// withView runs fn with the current view; if a data server refuses the
// capability (expired), it refreshes the layout once and runs fn again.
func (f *File) withView(fn func(v *view) error) error {
	v, err := f.current()
	if err != nil {
		return err
	}
	err = fn(v)
	if errors.Is(err, syscall.EACCES) && time.Now().UnixNano() > v.tok.Expiry-int64(time.Second) {
		if rerr := f.refresh(f.ctx); rerr != nil {
			return rerr
		}
		if v, err = f.current(); err != nil {
			return err
		}
		err = fn(v)
	}
	return err
}

// Name returns the path the file was opened with.
func (f *File) Name() string { return f.name }

// Ino returns the file's inode number.
func (f *File) Ino() uint64 { return f.ino }

// Size returns the size as this handle knows it: the size at open, grown
// by this handle's writes.
func (f *File) Size() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size
}

// Layout returns the file's layout.
func (f *File) Layout() layout.Layout {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view.lay
}

// ReadAt reads len(p) bytes at off. Holes read as zeros. At the end of the
// file it returns the bytes it read and io.EOF.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, f.err("read", rpc.Errorf(syscall.EINVAL, "negative offset"))
	}
	size := f.Size()
	if off >= size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > size-off {
		n = int(size - off)
	}
	err := f.withView(func(v *view) error {
		if v.inline != nil {
			v.inline.read(p[:n], off)
			return nil
		}
		return f.io(v).read(f.ctx, p[:n], off)
	})
	if err != nil {
		return 0, f.err("read", err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes p at off, straight to the data servers in parallel per
// column. The bytes are durable and visible to other opens after Sync or
// Close.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if !f.writable() {
		return 0, f.err("write", rpc.Errorf(syscall.EBADF, "file not open for writing"))
	}
	if off < 0 {
		return 0, f.err("write", rpc.Errorf(syscall.EINVAL, "negative offset"))
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.fits(off, int64(len(p))); err != nil {
		return 0, f.err("write", err)
	}
	if done, err := f.writeInline(p, off); done || err != nil {
		if err != nil {
			return 0, f.err("write", err)
		}
		return len(p), nil
	}
	var comps []int
	err := f.withView(func(v *view) error {
		var err error
		comps, err = f.io(v).write(f.ctx, p, off)
		return err
	})
	if err != nil {
		return 0, f.err("write", err)
	}
	end := off + int64(len(p))
	f.mu.Lock()
	for _, c := range comps {
		f.dirty[c] = true
	}
	f.end = max(f.end, end)
	f.size = max(f.size, end)
	f.mu.Unlock()
	return len(p), nil
}

// Read reads from the file's offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	off := f.pos
	f.mu.Unlock()
	n, err := f.ReadAt(p, off)
	f.mu.Lock()
	f.pos = off + int64(n)
	f.mu.Unlock()
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// Write writes at the file's offset (at the end with os.O_APPEND).
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	off := f.pos
	if f.flag&os.O_APPEND != 0 {
		off = f.size
	}
	f.mu.Unlock()
	n, err := f.WriteAt(p, off)
	f.mu.Lock()
	f.pos = off + int64(n)
	f.mu.Unlock()
	return n, err
}

// Seek sets the offset of Read and Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, f.err("seek", rpc.Errorf(syscall.EINVAL, "negative offset"))
	}
	f.pos = offset
	return offset, nil
}

// fits fails with EFBIG if n bytes at off reach past the largest file the
// layout addresses (layout.Layout.MaxSize).
func (f *File) fits(off, n int64) error {
	v, err := f.current()
	if err != nil {
		return err
	}
	if limit := v.lay.MaxSize(); off > limit || n > limit-off {
		return rpc.Errorf(syscall.EFBIG, fmt.Sprintf("%d bytes at %d: past the largest file layout %s addresses (%s)",
			n, off, v.lay, layout.FormatSize(limit)))
	}
	return nil
}

// Truncate sets the file's size: each column is cut (or extended with
// zeros) on its data server, then the MDS records the size.
func (f *File) Truncate(size int64) error {
	if !f.writable() {
		return f.err("truncate", rpc.Errorf(syscall.EBADF, "file not open for writing"))
	}
	if size < 0 {
		return f.err("truncate", rpc.Errorf(syscall.EINVAL, "negative size"))
	}
	if err := f.fits(size, 0); err != nil {
		return f.err("truncate", err)
	}
	if done, err := f.truncateInline(size); err != nil {
		return f.err("truncate", err)
	} else if done {
		return nil
	}
	err := f.withView(func(v *view) error { return f.io(v).truncate(f.ctx, size) })
	if err == nil {
		// The MDS sets mtime to its now with the size: a writer that does
		// not own the file may not set explicit times.
		err = f.c.mds(f.ctx, rpc.MSetattr, &rpc.SetattrReq{Ino: f.ino, Valid: rpc.SetSize, Size: uint64(size)}, &rpc.AttrResp{})
	}
	if err != nil {
		return f.err("truncate", err)
	}
	f.mu.Lock()
	f.size = size
	f.end = min(f.end, size)
	f.mu.Unlock()
	return nil
}

// Sync makes every byte written through this handle durable on the data
// servers, then publishes size and mtime to the MDS (LAYOUTCOMMIT).
func (f *File) Sync() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return os.ErrClosed
	}
	dirty, end := f.dirty, f.end
	f.dirty, f.end = map[int]bool{}, 0
	f.mu.Unlock()
	if len(dirty) == 0 && end == 0 {
		return nil
	}
	err := f.withView(func(v *view) error { return f.io(v).sync(f.ctx, dirty, end) })
	if err == nil {
		var r rpc.AttrResp
		v, _ := f.current()
		err = f.c.mds(f.ctx, rpc.MLayoutCommit, &rpc.LayoutCommitReq{Ino: f.ino, Gen: v.lay.Generation, End: uint64(end), Mtime: time.Now().UnixNano()}, &r)
	}
	if err != nil {
		f.mu.Lock()
		for c := range dirty {
			f.dirty[c] = true
		}
		f.end = max(f.end, end)
		f.mu.Unlock()
		return f.err("sync", err)
	}
	return nil
}

// Close syncs and releases the layout. A second Close returns os.ErrClosed.
func (f *File) Close() error {
	err := f.Sync()
	if errors.Is(err, os.ErrClosed) {
		return err
	}
	f.mu.Lock()
	f.closed = true
	uncounted := f.uncounted
	f.mu.Unlock()
	// LAYOUTRETURN is advisory; a failure does not fail the close.
	// A write layout's return ends this writer for the MDS (rebuilds wait
	// for the writers of a file). The MDS keeps nothing for a read
	// layout, nor for the write grant of a file that stayed inline, so
	// their close costs no call.
	if f.writable() && !uncounted {
		_ = f.c.mds(f.ctx, rpc.MLayoutReturn, &rpc.LayoutReturnReq{Ino: f.ino, Write: true}, &rpc.Empty{})
	}
	return err
}

// Stat returns the file's attributes from the MDS, with the size this
// handle knows if it is larger (uncommitted writes).
func (f *File) Stat() (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := f.c.mds(f.ctx, rpc.MGetattr, &rpc.InoReq{Ino: f.ino}, &r); err != nil {
		return nil, f.err("stat", err)
	}
	r.Attr.Size = uint64(max(int64(r.Attr.Size), f.Size()))
	return &r.Attr, nil
}

func (f *File) err(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}
