package nfs

import (
	"context"
	"os"
	"sync"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// fileTable holds the client library files the front end has open, one
// per inode, shared by every NFS open of it: a file is opened at the first
// OPEN (or for one anonymous READ or WRITE) and closed, which syncs it and
// publishes its size to the MDS, when the last open of it closes or
// expires.
type fileTable struct {
	s  *Server
	mu sync.Mutex
	m  map[uint64]*openFile
}

type openFile struct {
	mu     sync.Mutex
	refs   int
	rd, wr *client.File
	writes uint64 // WRITEs since opened: part of the change attribute
}

func newFileTable(s *Server) *fileTable { return &fileTable{s: s, m: map[uint64]*openFile{}} }

// acquire counts one more user of ino's open file.
func (t *fileTable) acquire(ino uint64) *openFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	of := t.m[ino]
	if of == nil {
		of = &openFile{}
		t.m[ino] = of
	}
	of.refs++
	return of
}

// release drops a user; the last one closes the files.
func (t *fileTable) release(ino uint64) error {
	t.mu.Lock()
	of := t.m[ino]
	if of == nil {
		t.mu.Unlock()
		return nil
	}
	of.refs--
	if of.refs > 0 {
		t.mu.Unlock()
		return nil
	}
	delete(t.m, ino)
	t.mu.Unlock()
	return of.close()
}

func (of *openFile) close() error {
	of.mu.Lock()
	defer of.mu.Unlock()
	var err error
	if of.wr != nil {
		err = of.wr.Close()
		of.wr = nil
	}
	if of.rd != nil {
		_ = of.rd.Close()
		of.rd = nil
	}
	return err
}

// file returns the client file to read (write false) or write ino with,
// opening it on first use. A writable file also serves reads, so that a
// reader sees what was written through the front end.
func (t *fileTable) file(ino uint64, of *openFile, write bool) (*client.File, error) {
	of.mu.Lock()
	defer of.mu.Unlock()
	if of.wr != nil {
		return of.wr, nil
	}
	if !write && of.rd != nil {
		return of.rd, nil
	}
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, _, err := t.s.cl.OpenIno(t.s.ctx, ino, flag)
	if err != nil {
		return nil, err
	}
	if write {
		of.wr = f
		if of.rd != nil {
			_ = of.rd.Close()
			of.rd = nil
		}
	} else {
		of.rd = f
	}
	return f, nil
}

// refresh fetches fresh attributes and layout for the open files of ino
// (close-to-open: an OPEN sees what others committed).
func (t *fileTable) refresh(ctx context.Context, ino uint64) {
	t.mu.Lock()
	of := t.m[ino]
	t.mu.Unlock()
	if of == nil {
		return
	}
	of.mu.Lock()
	defer of.mu.Unlock()
	for _, f := range []*client.File{of.rd, of.wr} {
		if f != nil {
			_, _ = f.Refresh(ctx)
		}
	}
}

// merge raises a's size to what the front end wrote and not yet committed.
func (t *fileTable) merge(a *rpc.Attr) {
	t.mu.Lock()
	of := t.m[a.Ino]
	t.mu.Unlock()
	if of == nil {
		return
	}
	of.mu.Lock()
	if of.wr != nil {
		a.Size = uint64(max(int64(a.Size), of.wr.Size()))
	}
	of.mu.Unlock()
}

// writes returns the change attribute's share of ino's pending writes.
func (t *fileTable) writes(ino uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if of := t.m[ino]; of != nil {
		return of.writes
	}
	return 0
}

// truncate sets ino's size through its open writable file, or a file
// opened for it.
func (t *fileTable) truncate(ctx context.Context, ino uint64, size int64) error {
	of := t.acquire(ino)
	defer func() { _ = t.release(ino) }()
	f, err := t.file(ino, of, true)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	t.mu.Lock()
	of.writes++
	t.mu.Unlock()
	return nil
}

// closeAll closes every open file (at server Close).
func (t *fileTable) closeAll() {
	t.mu.Lock()
	m := t.m
	t.m = map[uint64]*openFile{}
	t.mu.Unlock()
	for _, of := range m {
		_ = of.close()
	}
}
