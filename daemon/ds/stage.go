package ds

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Staged copies: a component being rebuilt from its peers (rebuild.go) is
// assembled in the files <component>.rebuild and <component>.rebuild.crc
// beside where it will live, with the same block checksums, and renamed
// into place only once it is complete and durable (publish). Until then no
// call reads it: a rebuild cut short by a crash of this server, of a
// source or of the MDS leaves at most a staged copy, never a half-written
// component readable as data. A staged copy survives a restart, so that a
// rebuild resumes from its last checkpoint; the removal of the component
// (a stray of an abandoned rebuild) removes it too. Staged copies are
// opened per call and closed once no call uses them (few are in use at
// once), and are not listed, scrubbed or served.

// stageSuffix names a staged copy's data file; its checksums add
// crcSuffix.
const stageSuffix = ".rebuild"

// stagePath is the data file of the staged copy of id.
func (st *store) stagePath(id rpc.ComponentID) string { return st.path(id) + stageSuffix }

// errNoStage is returned when a staged copy a call needs is gone.
var errNoStage = rpc.Errorf(syscall.ENOENT, "ds: no staged copy: the rebuild starts again")

// acquireStaged pins the staged copy of id, opening (or, with create,
// creating) its files; a missing one without create is nil, nil.
func (st *store) acquireStaged(id rpc.ComponentID, create bool) (*entry, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, ErrClosed
	}
	if e := st.staged[id]; e != nil {
		e.refs++
		return e, nil
	}
	name := st.stagePath(id)
	e, err := st.openFiles(id, name, create)
	if e == nil || err != nil {
		return nil, err
	}
	e.data = withDirect(st.disk, e.data, name) // rebuild_direct.go
	e.refs = 1
	st.staged[id] = e
	return e, nil
}

// existingStage pins the staged copy of id, which must exist.
func (st *store) existingStage(id rpc.ComponentID) (*entry, error) {
	e, err := st.acquireStaged(id, false)
	if err == nil && e == nil {
		err = errNoStage
	}
	return e, err
}

// releaseStaged unpins e and closes it if no call uses it.
func (st *store) releaseStaged(e *entry) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if st.staged[e.id] == e {
		delete(st.staged, e.id)
	}
	st.closeEntry(e)
}

// stageBegin starts the staged copy of id afresh (off 0) or resumes it at
// off, cutting what lies past; it returns errNoStage if there is nothing
// to resume.
func (st *store) stageBegin(id rpc.ComponentID, off uint64) (uint64, error) {
	if off > maxOffset {
		return 0, fmt.Errorf("%w: resume at %d", ErrRange, off)
	}
	e, err := st.acquireStaged(id, off == 0)
	if err != nil {
		return 0, err
	}
	if e == nil {
		return 0, errNoStage
	}
	defer st.releaseStaged(e)
	return st.truncateEntry(e, off)
}

// stageWrite writes p (with its wire checksums) at off in the staged copy
// of id, which must exist. The caller has verified wire against p (the
// rebuild checks every block it receives and sums what it decodes): the
// bytes are not summed again, only their stored CRCs derived from wire.
func (st *store) stageWrite(id rpc.ComponentID, off uint64, p, wire []byte) error {
	e, err := st.existingStage(id)
	if err != nil {
		return err
	}
	defer st.releaseStaged(e)
	if want := rpc.SumCount(off, len(p)) * rpc.SumSize; len(wire) != want || off > maxOffset || uint64(len(p)) > maxOffset-off {
		return fmt.Errorf("stage %s: %w: %d bytes at %d with %d bytes of checksums", componentName(id), rpc.ErrSum, len(p), off, len(wire))
	}
	if _, err = st.writeEntry(e, off, p, wire, true); err != nil {
		return err
	}
	startWriteback(e.data, int64(off), int64(len(p)))
	return nil
}

// stageCommit makes the staged copy of id durable: what a checkpoint
// records is on disk.
func (st *store) stageCommit(id rpc.ComponentID) (uint64, error) {
	e, err := st.existingStage(id)
	if err != nil {
		return 0, err
	}
	defer st.releaseStaged(e)
	return st.commitEntry(e)
}

// publish cuts the staged copy of id to size, makes it durable and
// renames it over the component: the checksums first, then the data file,
// whose appearance makes the component visible. A crash between the two
// renames leaves the new checksums with the old data (or with no data
// file): blocks that fail their checksum or a missing component, never
// wrong bytes. The old component's entry is dropped; calls in flight on
// it finish on its unlinked files.
func (st *store) publish(id rpc.ComponentID, size uint64) (uint64, error) {
	if st.tombs.removed(id.Ino, id.Gen, st.now()) {
		return 0, fmt.Errorf("%w: %s", ErrRemoved, componentName(id))
	}
	e, err := st.existingStage(id)
	if err != nil {
		return 0, err
	}
	defer st.releaseStaged(e)
	if _, err := st.truncateEntry(e, size); err != nil {
		return 0, err
	}
	// The directory is synced once, after the renames below: the staged
	// names need not be durable first (a crash before leaves a staged
	// copy that may be gone, and the rebuild starts again).
	e.mu.Lock()
	e.dirSynced = true
	e.mu.Unlock()
	if _, err := st.commitEntry(e); err != nil {
		return 0, err
	}
	old, err := st.acquire(id, false)
	if err != nil {
		return 0, err
	}
	if old != nil {
		defer st.release(old)
		// No write of the old component may land between the rename and
		// the drop: it would be lost.
		old.ranges.lock(0, math.MaxUint64, true)
		defer old.ranges.unlock(0, math.MaxUint64, true)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if e.dead {
		return 0, errNoStage // removed meanwhile
	}
	name, staged := st.path(id), st.stagePath(id)
	if err := st.disk.Rename(staged+crcSuffix, name+crcSuffix); err != nil {
		return 0, fmt.Errorf("publish %s checksums: %w", componentName(id), err)
	}
	if err := st.disk.Rename(staged, name); err != nil {
		return 0, fmt.Errorf("publish %s: %w", componentName(id), err)
	}
	if old != nil && !old.dead {
		st.drop(old, st.open)
	}
	// The staged entry's files are the component's now: it is closed
	// once released, and its bytes stay counted as used.
	if st.staged[id] == e {
		delete(st.staged, id)
	}
	e.dead = true
	if err := syncDir(st.disk, filepath.Join(st.dir, subdir(id))); err != nil {
		return 0, fmt.Errorf("publish %s: %w", componentName(id), err)
	}
	return size, nil
}

// removeStaged removes the staged copy of id, if any.
func (st *store) removeStaged(id rpc.ComponentID) error {
	name := st.stagePath(id)
	e, err := st.acquireStaged(id, false)
	if err != nil {
		return err
	}
	if e == nil {
		if err := st.disk.Remove(name + crcSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove staged %s: %w", componentName(id), err)
		}
		return nil
	}
	defer st.releaseStaged(e)
	return st.unlinkEntry(e, name, st.staged)
}
