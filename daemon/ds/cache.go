package ds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// The open-component cache: opening two files per 1 MiB call would cost
// more than the call, so components stay open (at most maxOpen idle ones,
// least recently used closed first) and a call pins the entry it uses.

// maxOpen bounds the components whose files stay open between calls.
const maxOpen = 256

// entry is an open component.
type entry struct {
	id   rpc.ComponentID
	data File
	crc  File

	// Guarded by store.mu.
	refs       int
	prev, next *entry
	// dead is set under both store.mu and mu once the component was
	// removed: calls in flight finish on the unlinked files.
	dead bool

	ranges rangeLock

	mu        sync.Mutex
	size      uint64 // bytes written and visible
	reserved  uint64 // bytes counted in store.used for this component: its data file's allocated blocks
	dirSynced bool   // the directory entry of a new file is durable
}

// acquire pins the open entry of id, opening its files if needed. A
// missing component is created when create is set; otherwise acquire
// returns nil, nil. Files are opened under st.mu so that two calls never
// open one component twice; opens are rare thanks to the cache.
func (st *store) acquire(id rpc.ComponentID, create bool) (*entry, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, ErrClosed
	}
	if e := st.open[id]; e != nil {
		if e.refs == 0 {
			st.idle.remove(e)
		}
		e.refs++
		return e, nil
	}
	e, err := st.openEntry(id, create)
	if e == nil || err != nil {
		return nil, err
	}
	e.refs = 1
	st.open[id] = e
	st.evict()
	return e, nil
}

// release unpins e.
func (st *store) release(e *entry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if e.dead || st.closed {
		st.closeEntry(e)
		return
	}
	st.idle.pushFront(e)
	st.evict()
}

// evict closes idle entries while more than maxOpen are open.
func (st *store) evict() {
	for len(st.open) > maxOpen {
		e := st.idle.back()
		if e == nil {
			return // everything is in use; shrink on later releases
		}
		st.idle.remove(e)
		delete(st.open, e.id)
		// A write that failed half way may have grown the file without
		// growing size: count what the file really holds.
		st.settle(e)
		st.closeEntry(e)
	}
}

func (st *store) closeEntry(e *entry) {
	err := e.data.Close()
	if cerr := e.crc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.log.Warn("close component failed", "inode", e.id.Ino, "gen", e.id.Gen, "col", e.id.Col, "err", err)
	}
}

// openEntry opens the files of id; see acquire.
func (st *store) openEntry(id rpc.ComponentID, create bool) (*entry, error) {
	return st.openFiles(id, st.path(id), create)
}

// openFiles opens the data file name of id and its checksums; see acquire.
func (st *store) openFiles(id rpc.ComponentID, name string, create bool) (*entry, error) {
	data, err := st.disk.OpenFile(name, os.O_RDWR, 0)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, nil
		}
		if st.tombs.removed(id.Ino, id.Gen, st.now()) {
			return nil, fmt.Errorf("%w: %s", ErrRemoved, componentName(id))
		}
		data, err = st.createData(name)
		created = true
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", componentName(id), err)
	}
	crcFlags := os.O_RDWR | os.O_CREATE
	if created {
		crcFlags |= os.O_TRUNC // a stale checksum file of a removed component
	}
	crc, err := st.disk.OpenFile(name+crcSuffix, crcFlags, fileMode)
	if err != nil {
		data.Close()
		return nil, fmt.Errorf("open %s checksums: %w", componentName(id), err)
	}
	info, err := data.Stat()
	if err != nil {
		data.Close()
		crc.Close()
		return nil, fmt.Errorf("open %s: %w", componentName(id), err)
	}
	size := uint64(info.Size())
	return &entry{id: id, data: data, crc: crc, size: size, reserved: allocatedInfo(info), dirSynced: !created}, nil
}

// createData creates a data file, and its directory (made durable at
// once: there are at most 256) if needed.
func (st *store) createData(name string) (File, error) {
	f, err := st.disk.OpenFile(name, os.O_RDWR|os.O_CREATE, fileMode)
	if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	if err := st.disk.MkdirAll(filepath.Dir(name), dirMode); err != nil {
		return nil, err
	}
	if err := syncDir(st.disk, st.dir); err != nil {
		return nil, err
	}
	return st.disk.OpenFile(name, os.O_RDWR|os.O_CREATE, fileMode)
}

// close closes every open component. Calls after it fail with ErrClosed.
func (st *store) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.closed = true
	st.wb.close()
	if err := st.tombs.close(); err != nil {
		st.log.Warn("close tombstones failed", "err", err)
	}
	for id, e := range st.open {
		delete(st.open, id)
		if e.refs == 0 {
			st.idle.remove(e)
			st.closeEntry(e)
		} // else the last release closes it
	}
}

// lru is an intrusive doubly linked list of entries.
type lru struct {
	head, tail *entry
}

func (l *lru) pushFront(e *entry) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	} else {
		l.tail = e
	}
	l.head = e
}

func (l *lru) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (l *lru) back() *entry { return l.tail }
