package fuse

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

// openFile is the state of one inode while handles are open on it on this
// mount: one client.File shared by all of them (so they agree on the size
// and see each other's writes) and the write-behind buffer.
type openFile struct {
	fsys *fileSystem
	ino  uint64

	// refs, closing and done are guarded by fsys.mu.
	refs    int
	closing bool
	done    chan struct{} // closed when close has finished

	mu      sync.Mutex     // guards the fields below
	f       *client.File   // nil until the first I/O of a file this mount created
	created bool           // this mount created the file and f is not open yet
	retired []*client.File // read-only files replaced by a writable one; closed last
	attr    rpc.Attr       // the last attributes seen
	silly   []sillyEntry   // names this inode was moved to when unlinked while open

	tag   qos.Tag    // of the process that opened it first (job.go); guarded by mu
	quota quotaGrant // how far the file may grow (quota.go); guarded by mu
	// asked is when the MDS was last asked for attr by an open (the
	// time and the dircache epoch before the call; zero: not since the
	// state was made), for getattr (openattr.go); guarded by mu.
	asked askedAttr

	w  writer
	ra readahead
}

// sillyEntry is a name an unlinked open file was moved to.
type sillyEntry struct {
	parent uint64
	name   string
}

func newOpenFile(fsys *fileSystem, ino uint64) *openFile {
	of := &openFile{fsys: fsys, ino: ino, done: make(chan struct{})}
	of.w.init(of)
	of.ra.init(of)
	return of
}

// setCreated records the attributes of a file this mount just created;
// its File is opened on first use.
func (of *openFile) setCreated(a *rpc.Attr) {
	of.mu.Lock()
	of.attr = *a
	of.created = of.f == nil
	of.mu.Unlock()
}

// adopt makes cr.File, opened for writing by the create, the shared File
// if none is open, with cr's quota room as the file's grant; it reports
// whether it did.
func (of *openFile) adopt(cr *client.Created) bool {
	of.mu.Lock()
	defer of.mu.Unlock()
	if of.f != nil {
		return false
	}
	of.f, of.attr, of.created = cr.File, *cr.Attr, false
	if cr.QuotaKnown {
		of.quota = quotaGrant{known: true, end: cr.QuotaEnd}
	}
	return true
}

// setTag records the QoS tag of the process opening the file; the shared
// File is opened with the tag of the first process that opens it.
func (of *openFile) setTag(t qos.Tag) {
	of.mu.Lock()
	if of.f == nil {
		of.tag = t
	}
	of.mu.Unlock()
}

// open makes sure the shared File can write (if write is set) and, with
// fresh, fetches fresh attributes and layout (close-to-open). It returns
// the attributes.
func (of *openFile) open(ctx context.Context, write, fresh bool) (*rpc.Attr, error) {
	asked := askedAttr{at: time.Now(), epoch: of.fsys.dc.epoch.Load()}
	of.mu.Lock()
	defer of.mu.Unlock()
	switch {
	case of.f == nil || (write && !of.f.Writable()):
		flag := os.O_RDONLY
		if write || (of.f != nil && of.f.Writable()) {
			flag = os.O_RDWR
		}
		open := of.fsys.c.OpenIno
		if of.created {
			// Its creator may write it whatever its mode (open(2) with
			// O_CREAT of a read-only file).
			open = of.fsys.c.OpenCreatedIno
		}
		f, a, err := open(client.WithTag(ctx, of.tag), of.ino, flag)
		if err != nil {
			return nil, err
		}
		of.created = false
		if of.f != nil {
			of.retired = append(of.retired, of.f)
		}
		of.f, of.attr, of.asked = f, *a, asked
	case fresh:
		a, err := of.f.Refresh(ctx)
		if err != nil {
			return nil, err
		}
		of.attr, of.asked = *a, asked
		of.ra.drop()
	}
	a := of.attr
	return &a, nil
}

// refresh fetches the layout and attributes again if the shared File is
// open (after the file's layout changed).
func (of *openFile) refresh() error {
	of.mu.Lock()
	defer of.mu.Unlock()
	if of.f == nil {
		return nil
	}
	a, err := of.f.Refresh(of.fsys.ctx)
	if err != nil {
		return err
	}
	of.attr = *a
	of.ra.drop()
	return nil
}

// file returns the shared File, opening it if this mount created the file
// and has not used it yet.
func (of *openFile) file(write bool) (*client.File, error) {
	of.mu.Lock()
	f := of.f
	of.mu.Unlock()
	if f != nil && (!write || f.Writable()) {
		return f, nil
	}
	if _, err := of.open(of.fsys.ctx, write, false); err != nil {
		return nil, err
	}
	of.mu.Lock()
	defer of.mu.Unlock()
	return of.f, nil
}

// lastAttr returns the last attributes seen, with the size this mount
// knows.
func (of *openFile) lastAttr() *rpc.Attr {
	of.mu.Lock()
	a := of.attr
	of.mu.Unlock()
	a.Size = max(a.Size, of.size())
	return &a
}

// size is the file's size as this mount knows it: the File's, grown by
// data still in the write-behind buffer.
func (of *openFile) size() uint64 {
	of.mu.Lock()
	f := of.f
	of.mu.Unlock()
	var n int64
	if f != nil {
		n = f.Size()
	}
	return uint64(max(n, of.w.pendingEnd()))
}

// merge applies what this mount knows to attributes from the MDS.
func (of *openFile) merge(a *rpc.Attr) {
	a.Size = max(a.Size, of.size())
	of.mu.Lock()
	silly := uint32(len(of.silly))
	a.Nlink -= min(a.Nlink, silly)
	attr := *a
	of.attr = attr
	of.mu.Unlock()
}

// read reads len(dest) bytes at off for the handle h, after the
// write-behind data has reached the data servers, and returns the reply
// (from dest or from blocks read ahead). It holds fewer bytes at the end
// of the file.
func (of *openFile) read(h *handle, dest []byte, off int64) (gofuse.ReadResult, error) {
	of.w.wait()
	f, err := of.file(false)
	if err != nil {
		return nil, err
	}
	return of.ra.read(f, h, dest, off)
}

// write accepts data at off into the write-behind buffer.
func (of *openFile) write(data []byte, off int64) error {
	f, err := of.file(true)
	if err != nil {
		return err
	}
	if err := of.roomFor(uint64(off) + uint64(len(data))); err != nil {
		return err
	}
	err = of.w.write(f, data, off)
	// After the data is in the writer, so that a block read ahead before
	// this drop is gone and one started after it writes the data back first.
	of.ra.drop()
	of.fsys.dc.changed()
	return err
}

// sync writes back the buffered data, then makes it durable and
// publishes the size (LAYOUTCOMMIT). The first error of a write behind is
// reported here.
func (of *openFile) sync() error {
	err := of.w.drain()
	of.mu.Lock()
	f := of.f
	of.mu.Unlock()
	if f != nil && f.Writable() {
		if serr := f.Sync(); err == nil {
			err = serr
		}
		// The size the MDS has changed: listings made before are stale.
		of.fsys.dc.changed()
	}
	return err
}

// truncate sets the size through the shared File, after the buffered data
// is written.
func (of *openFile) truncate(size uint64) error {
	if err := of.w.drain(); err != nil {
		return err
	}
	f, err := of.file(true)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(size))
	of.ra.drop()
	of.fsys.dc.changed()
	return err
}

// addSilly records a name this inode was moved to on unlink.
func (of *openFile) addSilly(parent uint64, name string) {
	of.mu.Lock()
	of.silly = append(of.silly, sillyEntry{parent: parent, name: name})
	of.mu.Unlock()
}

// hasSilly reports whether name in parent is one of this inode's silly
// names.
func (of *openFile) hasSilly(parent uint64, name string) bool {
	of.mu.Lock()
	defer of.mu.Unlock()
	for _, s := range of.silly {
		if s.parent == parent && s.name == name {
			return true
		}
	}
	return false
}

// close runs at the last release: write back, sync, close the files and
// remove the silly names. It returns the first error.
func (of *openFile) close() error {
	err := of.w.drain()
	of.ra.close()
	of.mu.Lock()
	files := append(of.retired, of.f)
	silly := of.silly
	of.f, of.retired, of.silly = nil, nil, nil
	of.mu.Unlock()
	wrote := false
	for _, f := range files {
		if f == nil {
			continue
		}
		wrote = wrote || f.Writable()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if wrote {
		// Its close may have published a size: listed attributes of
		// the file are stale. A reader's close changes nothing.
		of.fsys.dc.touch(of.ino)
	}
	if len(silly) > 0 {
		of.fsys.dc.changed()
	}
	for _, s := range silly {
		uerr := of.fsys.c.UnlinkIno(of.fsys.ctx, s.parent, s.name)
		of.fsys.da.forget(s.parent)
		if uerr == nil {
			of.fsys.dc.removed(s.parent, s.name)
		} else {
			of.fsys.dc.unsure(s.parent)
		}
		if uerr != nil && !errors.Is(uerr, syscall.ENOENT) && err == nil {
			err = uerr
		}
	}
	return err
}
