package fuse

import (
	"context"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// dirPage is how many entries a directory handle asks the MDS for at once.
const dirPage = 1024

// dirHandle is an open directory. It lists "." and "..", then the
// entries page by page from the MDS, in name order, with their
// attributes, so READDIRPLUS needs no lookup per entry. An entry's offset
// is its position in the listing; a seek to 0 (rewinddir) lists afresh.
type dirHandle struct {
	n *node

	mu    sync.Mutex
	ents  []rpc.DirEntry // the listing so far, "." and ".." first
	more  bool           // the MDS has entries after the last of ents
	after string         // the name the MDS listed last
	pos   int            // index of the next entry Readdirent returns
	last  *rpc.DirEntry  // the entry Readdirent returned last
}

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileFsyncdirer   = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

// OpendirHandle opens a directory for listing.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	d := &dirHandle{n: n}
	d.reset()
	n.mu.Lock()
	n.openDirs++
	n.mu.Unlock()
	return d, 0, 0
}

// reset starts the listing again with "." and "..".
func (d *dirHandle) reset() {
	self := d.n.ino()
	parent := self
	if _, p := d.n.Parent(); p != nil {
		parent = p.StableAttr().Ino
	}
	d.ents = []rpc.DirEntry{
		{Name: ".", Attr: rpc.Attr{Ino: self, Mode: rpc.TypeDir}},
		{Name: "..", Attr: rpc.Attr{Ino: parent, Mode: rpc.TypeDir}},
	}
	d.more, d.pos, d.last, d.after = true, 0, nil, ""
}

// fill fetches pages until the listing has an entry at index i or the
// directory ends. Called with d.mu held.
func (d *dirHandle) fill(i int) error {
	for i >= len(d.ents) && d.more {
		page, more, err := d.n.fsys.c.ReadDirPage(d.n.fsys.ctx, d.n.ino(), d.after, dirPage)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			d.after = page[len(page)-1].Name
		}
		for i := range page {
			if !d.n.fsys.hidden(d.n.ino(), &page[i]) {
				d.ents = append(d.ents, page[i])
			}
		}
		d.more = more
	}
	return nil
}

// Readdirent returns the next entry, or nil at the end.
func (d *dirHandle) Readdirent(ctx context.Context) (*gofuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fill(d.pos); err != nil {
		return nil, d.n.fsys.errs.fail("readdir", d.n.ino(), err)
	}
	if d.pos >= len(d.ents) {
		return nil, 0
	}
	e := &d.ents[d.pos]
	d.pos++
	d.last = e
	return &gofuse.DirEntry{Name: e.Name, Ino: e.Attr.Ino, Mode: fileType(e.Attr.Mode), Off: uint64(d.pos)}, 0
}

// Seekdir moves to the entry at offset off (0 lists afresh).
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		d.reset()
		return 0
	}
	if err := d.fill(int(off) - 1); err != nil {
		return d.n.fsys.errs.fail("readdir", d.n.ino(), err)
	}
	if int(off) > len(d.ents) {
		return syscall.EINVAL
	}
	d.pos, d.last = int(off), nil
	return 0
}

// Lookup answers READDIRPLUS for the entry Readdirent returned last, from
// the attributes the listing carried.
func (d *dirHandle) Lookup(ctx context.Context, name string, out *gofuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.mu.Lock()
	e := d.last
	d.mu.Unlock()
	if e == nil || e.Name != name {
		return d.n.Lookup(ctx, name, out)
	}
	a := e.Attr
	return d.n.child(ctx, &a, out), 0
}

// Fsyncdir has nothing to do: the MDS commits every change before it
// answers.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno { return 0 }

// Releasedir drops the listing.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	d.n.mu.Lock()
	d.n.openDirs--
	d.n.mu.Unlock()
}
