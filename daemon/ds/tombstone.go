package ds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
)

// Tombstones: a removed file's components must not come back. A client
// may hold a capability for a file until it expires, and a write with it
// would create the component anew after the MDS removed it, an orphan no
// inode references. So when the MDS removes the components of a
// generation that is gone (the file was unlinked, or truncated to a new
// generation), it sends the time until which capabilities of that
// generation may be alive (rpc.DSReq.Tombstone); until then the data
// server refuses every call of a client for that (inode, generation),
// with ESTALE, and creates none of its components. Tombstones are durable
// (Dir/tombstones, appended and synced before the removal answers) and
// are dropped once past: when the server starts, and whenever their
// number has doubled since the last time (the file is then rewritten with
// the live ones), so that neither memory nor the file grows without
// bound. Removals that arrive together share one sync (group commit):
// the MDS's collector removes many files at once, and a sync per
// tombstone made an unlink cost as many disk syncs as the file had
// columns.

const (
	tombName    = "tombstones"
	tombRecSize = 8 + 8 + 8 + 4 // ino, gen, until (unix ns), CRC32C of the 24 bytes before
	maxTombFile = 1 << 30       // refuse to load more than this
)

type tombKey struct{ ino, gen uint64 }

// tombstones is the set of removed generations. It is safe for concurrent
// use.
type tombstones struct {
	disk Disk
	dir  string

	// smu is held while syncing or replacing the file, so that a sync
	// never meets a file being replaced; taken before mu.
	smu    sync.Mutex
	synced uint64 // records appended (written) that are durable; guarded by smu

	mu      sync.RWMutex
	f       File
	n       int64  // bytes in f
	written uint64 // records ever appended
	m       map[tombKey]int64
	pruneAt int64 // prune when n reaches it
}

// openTombstones loads dir's tombstones that are still live at now (unix
// ns) and rewrites the file with only those.
func openTombstones(d Disk, dir string, now int64) (*tombstones, error) {
	t := &tombstones{disk: d, dir: dir, m: map[tombKey]int64{}}
	name := filepath.Join(dir, tombName)
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("tombstones: %w", err)
	default:
		err = t.load(f, now)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := t.rewrite(); err != nil {
		return nil, err
	}
	return t, nil
}

// load reads records up to the first torn or corrupt one (an append cut
// by a crash: its removal was never acknowledged).
func (t *tombstones) load(f File, now int64) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tombstones: %w", err)
	}
	if info.Size() > maxTombFile {
		return fmt.Errorf("%w: tombstones file is %d bytes", ErrFormat, info.Size())
	}
	b := make([]byte, info.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("tombstones: %w", err)
	}
	b = b[:n]
	for len(b) >= tombRecSize {
		rec := b[:tombRecSize]
		b = b[tombRecSize:]
		if crc32.Checksum(rec[:24], castagnoli) != binary.LittleEndian.Uint32(rec[24:]) {
			break
		}
		k := tombKey{binary.LittleEndian.Uint64(rec), binary.LittleEndian.Uint64(rec[8:])}
		until := int64(binary.LittleEndian.Uint64(rec[16:]))
		if until >= now && until > t.m[k] {
			t.m[k] = until
		}
	}
	return nil
}

// rewrite replaces the file with the live records, atomically, and opens
// it for appends.
func (t *tombstones) rewrite() error {
	name := filepath.Join(t.dir, tombName)
	tmp := name + ".tmp"
	w, err := t.disk.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fmt.Errorf("tombstones: %w", err)
	}
	b := make([]byte, 0, len(t.m)*tombRecSize)
	for k, until := range t.m {
		b = appendTomb(b, k, until)
	}
	_, err = w.WriteAt(b, 0)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = t.disk.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(t.disk, t.dir)
	}
	if err != nil {
		return fmt.Errorf("tombstones: %w", err)
	}
	f, err := t.disk.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("tombstones: %w", err)
	}
	if t.f != nil {
		t.f.Close() // the replaced file
	}
	t.f, t.n = f, int64(len(b))
	t.pruneAt = 2*t.n + 1024*tombRecSize
	return nil
}

func appendTomb(b []byte, k tombKey, until int64) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, k.ino)
	b = binary.LittleEndian.AppendUint64(b, k.gen)
	b = binary.LittleEndian.AppendUint64(b, uint64(until))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// tomb is a generation removed until until (unix ns).
type tomb struct {
	key   tombKey
	until int64
}

// add records that generation gen of inode ino is removed until until
// (unix ns), durably; now is the time, for pruning. Concurrent adds share
// a sync of the file.
func (t *tombstones) add(ino, gen uint64, until, now int64) error {
	return t.addMany([]tomb{{tombKey{ino, gen}, until}}, now)
}

// addMany records the tombstones ts, durably, with one write (and the
// sync an add makes). Concurrent adds share a sync of the file.
func (t *tombstones) addMany(ts []tomb, now int64) error {
	if len(ts) == 0 {
		return nil
	}
	what := fmt.Sprintf("tombstone of inode %d generation %d", ts[0].key.ino, ts[0].key.gen)
	if len(ts) > 1 {
		what = fmt.Sprintf("%d tombstones (inode %d generation %d first)", len(ts), ts[0].key.ino, ts[0].key.gen)
	}
	t.mu.Lock()
	if t.f == nil {
		t.mu.Unlock()
		return ErrClosed
	}
	var rec []byte
	for _, x := range ts {
		if t.m[x.key] < x.until {
			rec = appendTomb(rec, x.key, x.until)
		}
	}
	if len(rec) > 0 {
		if _, err := t.f.WriteAt(rec, t.n); err != nil {
			t.mu.Unlock()
			return fmt.Errorf("%s: %w", what, err)
		}
		t.n += int64(len(rec))
		t.written += uint64(len(rec) / tombRecSize)
		// Seen before they are durable: refusing the generations' calls
		// early is harmless, the removals are under way.
		for _, x := range ts {
			t.m[x.key] = max(t.m[x.key], x.until)
		}
	}
	// Also when the keys were there: the add that wrote them may not
	// have synced yet.
	w := t.written
	t.mu.Unlock()
	if err := t.syncTo(w); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return t.prune(now)
}

// syncTo makes the first w appended records durable: the first caller
// syncs everything appended so far, those waiting behind it find their
// record synced.
func (t *tombstones) syncTo(w uint64) error {
	t.smu.Lock()
	defer t.smu.Unlock()
	if t.synced >= w {
		return nil
	}
	t.mu.RLock()
	f, upto := t.f, t.written
	t.mu.RUnlock()
	if f == nil {
		return ErrClosed
	}
	if err := f.Sync(); err != nil {
		return err
	}
	t.synced = upto
	return nil
}

// prune rewrites the file with the live records once it has doubled.
func (t *tombstones) prune(now int64) error {
	t.smu.Lock()
	defer t.smu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil || t.n < t.pruneAt {
		return nil
	}
	maps.DeleteFunc(t.m, func(_ tombKey, u int64) bool { return u < now })
	if err := t.rewrite(); err != nil {
		return err // the records are durable; the old file is still in use
	}
	t.synced = t.written // the new file holds every live record, synced
	return nil
}

// removed reports whether generation gen of inode ino is removed at now
// (unix ns).
func (t *tombstones) removed(ino, gen uint64, now int64) bool {
	t.mu.RLock()
	until, ok := t.m[tombKey{ino, gen}]
	t.mu.RUnlock()
	return ok && now <= until
}

// len returns the number of tombstones held, live or past.
func (t *tombstones) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

func (t *tombstones) close() error {
	t.smu.Lock()
	defer t.smu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}
