package fuse

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Statahead and negative lookups. When many names of one directory are
// looked up in a short time (ls -l, find, a job stat'ing its inputs, or
// creating many files: the kernel looks each new name up first), one
// listing of the directory with every entry's attributes replaces a
// lookup per name: the next lookups are answered from it while it is
// younger than the entry timeout, as if the mount had looked the name up
// when the listing was made.
//
// A listing answers two questions, trusted for different reasons:
//
//   - whether a name exists. The mount's own changes to the directory's
//     names (create, mkdir, unlink, rmdir, ...) are applied to the
//     listing as they are made, also to one being fetched (replayed on
//     it when it comes), so a name missing from a fresh listing is
//     answered ENOENT without asking the MDS: names may be up to the
//     entry timeout old, as for the kernel's own name cache. A change the
//     mount cannot apply (a rename, a failed call) drops the listing.
//   - an existing name's attributes. A change made through this mount
//     makes the attributes of the inodes it changes stale in every
//     listing (touch: a directory whose names changed, the inode that
//     lost a link); a change whose inodes the mount does not single out
//     (a write, setattr, rename) makes every listed attribute stale. An
//     entry the mount itself added keeps the attributes the MDS answered
//     it with.
//
// The answers carry the listing's remaining age as their cache timeouts,
// so the kernel never holds a name or attributes longer than the entry
// timeout after the MDS gave them.
const (
	stataheadAfter = 8     // lookups (found or not) in a directory that trigger a listing
	stataheadMax   = 16384 // larger directories are not listed
	stataheadDirs  = 256   // listings kept at once
)

// dirCache holds the listings.
type dirCache struct {
	fsys *fileSystem
	ttl  time.Duration

	// epoch counts the changes made through this mount; attributes
	// listed before the last change of everything (all), or of their
	// inode (touched), are stale.
	epoch atomic.Uint64
	all   atomic.Uint64

	mu      sync.Mutex
	dirs    map[uint64]*listing
	touched map[uint64]touch
}

// touch is when an inode's attributes last changed through the mount.
type touch struct {
	epoch uint64
	at    time.Time
}

// listing is one directory's lookups and listing.
type listing struct {
	hits    int       // lookups since window
	window  time.Time // start of the counting window
	ents    map[string]dentry
	made    time.Time // when the listing was asked for
	loading bool
	ready   chan struct{} // closed when the fetch under way ends
	skip    time.Time     // too large: do not list before this
	// While loading: the mount's changes to the names, to replay on the
	// listing when it comes; spoiled: a change that cannot be replayed
	// happened, the listing is dropped.
	journal []nameChange
	spoiled bool
}

// dentry is a listed name's attributes and the epoch they were current in.
type dentry struct {
	attr  rpc.Attr
	epoch uint64
}

// nameChange is a change the mount made to a directory's names: name now
// has attributes attr, or is gone.
type nameChange struct {
	name string
	attr rpc.Attr
	gone bool
}

// answer is what a listing knows of a name.
type answer int

const (
	unknown answer = iota // ask the MDS
	present               // the name exists, with fresh attributes
	absent                // no such name
)

func newDirCache(fsys *fileSystem, ttl time.Duration) *dirCache {
	return &dirCache{fsys: fsys, ttl: ttl, dirs: map[uint64]*listing{}, touched: map[uint64]touch{}}
}

// changed makes every listed attribute stale.
func (dc *dirCache) changed() { dc.all.Store(dc.epoch.Add(1)) }

// touch makes the listed attributes of inode ino stale.
func (dc *dirCache) touch(ino uint64) {
	if dc.ttl <= 0 {
		return
	}
	now := time.Now()
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if len(dc.touched) >= 4*stataheadMax {
		// Listings made before a touch older than the entry timeout
		// have expired: it is of no more use.
		for ino, t := range dc.touched {
			if now.Sub(t.at) > dc.ttl {
				delete(dc.touched, ino)
			}
		}
		if len(dc.touched) >= 4*stataheadMax {
			dc.touched = map[uint64]touch{}
			dc.all.Store(dc.epoch.Add(1))
		}
	}
	dc.touched[ino] = touch{epoch: dc.epoch.Add(1), at: now}
}

// freshLocked reports whether listed attributes are current.
func (dc *dirCache) freshLocked(e dentry) bool {
	return e.epoch >= dc.all.Load() && e.epoch >= dc.touched[e.attr.Ino].epoch
}

// lookup answers name in directory parent from a fresh listing, with how
// long the answer may be cached.
func (dc *dirCache) lookup(parent uint64, name string) (*rpc.Attr, time.Duration, answer) {
	if dc.ttl <= 0 {
		return nil, 0, unknown
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	l := dc.dirs[parent]
	if l == nil || l.ents == nil {
		return nil, 0, unknown
	}
	left := dc.ttl - time.Since(l.made)
	if left <= 0 {
		l.ents = nil
		return nil, 0, unknown
	}
	e, ok := l.ents[name]
	switch {
	case !ok:
		return nil, left, absent
	case !dc.freshLocked(e):
		return nil, 0, unknown
	}
	return &e.attr, left, present
}

// loading returns a channel closed when the listing of parent being
// fetched comes, or nil if none is. A lookup the listing cannot answer
// yet waits for it rather than asking the MDS: a burst of lookups started
// it, and more are coming (each process stat'ing its directory's files
// would otherwise send the MDS every lookup made while it loads).
func (dc *dirCache) loading(parent uint64) <-chan struct{} {
	if dc.ttl <= 0 {
		return nil
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if l := dc.dirs[parent]; l != nil && l.loading {
		return l.ready
	}
	return nil
}

// asked counts a lookup in parent that the MDS answered, and starts
// listing parent after stataheadAfter of them within the entry timeout,
// unless a listing is fresh or being made.
func (dc *dirCache) asked(parent uint64) {
	if dc.ttl <= 0 {
		return
	}
	now := time.Now()
	dc.mu.Lock()
	defer dc.mu.Unlock()
	l := dc.dirs[parent]
	if l == nil {
		dc.sweepLocked(now)
		l = &listing{window: now}
		dc.dirs[parent] = l
	}
	if now.Sub(l.window) > dc.ttl {
		l.hits, l.window = 0, now
	}
	l.hits++
	fresh := l.ents != nil && now.Sub(l.made) < dc.ttl
	if l.hits < stataheadAfter || l.loading || fresh || now.Before(l.skip) {
		return
	}
	l.hits, l.window, l.loading = 0, now, true
	l.ready = make(chan struct{})
	l.journal, l.spoiled = nil, false
	epoch := dc.epoch.Load()
	dc.fsys.bg.Add(1)
	go func() {
		defer dc.fsys.bg.Done()
		dc.load(parent, l, now, epoch)
	}()
}

// load lists parent and keeps the listing, with the mount's changes made
// meanwhile replayed on it.
func (dc *dirCache) load(parent uint64, l *listing, made time.Time, epoch uint64) {
	ents, more, err := dc.fsys.c.ReadDirPage(dc.fsys.ctx, parent, "", stataheadMax)
	dc.mu.Lock()
	defer dc.mu.Unlock()
	journal, spoiled := l.journal, l.spoiled
	l.loading, l.journal, l.spoiled = false, nil, false
	if l.ready != nil {
		close(l.ready)
		l.ready = nil
	}
	switch {
	case err != nil || spoiled:
		return
	case more:
		l.skip = made.Add(dc.ttl)
		return
	}
	m := make(map[string]dentry, len(ents))
	for _, e := range ents {
		m[e.Name] = dentry{attr: e.Attr, epoch: epoch}
	}
	l.ents, l.made = m, made
	for _, c := range journal {
		l.applyLocked(c, dc.epoch.Load())
	}
}

// added records that the mount made name in parent (create, mkdir,
// symlink, mknod, link), with the attributes the MDS answered.
func (dc *dirCache) added(parent uint64, name string, a *rpc.Attr) {
	dc.note(parent, nameChange{name: name, attr: *a})
}

// removed records that the mount removed name from parent.
func (dc *dirCache) removed(parent uint64, name string) {
	dc.note(parent, nameChange{name: name, gone: true})
}

func (dc *dirCache) note(parent uint64, c nameChange) {
	if dc.ttl <= 0 {
		return
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	l := dc.dirs[parent]
	if l == nil {
		return
	}
	if l.loading {
		l.journal = append(l.journal, c)
	}
	if l.ents != nil {
		l.applyLocked(c, dc.epoch.Load())
	}
}

// unsure drops what is known of parent's names: the mount changed them
// in a way it cannot apply (a rename, a call whose outcome is unknown).
func (dc *dirCache) unsure(parent uint64) {
	if dc.ttl <= 0 {
		return
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if l := dc.dirs[parent]; l != nil {
		l.ents = nil
		l.spoiled = l.loading
	}
}

func (l *listing) applyLocked(c nameChange, epoch uint64) {
	if c.gone {
		delete(l.ents, c.name)
		return
	}
	l.ents[c.name] = dentry{attr: c.attr, epoch: epoch}
}

// sweepLocked drops listings no longer of use when there are too many.
func (dc *dirCache) sweepLocked(now time.Time) {
	if len(dc.dirs) < stataheadDirs {
		return
	}
	for ino, l := range dc.dirs {
		if !l.loading && now.Sub(l.window) > dc.ttl && now.Sub(l.made) > dc.ttl {
			delete(dc.dirs, ino)
		}
	}
	if len(dc.dirs) >= stataheadDirs {
		for ino, l := range dc.dirs {
			if !l.loading {
				delete(dc.dirs, ino)
			}
		}
	}
}

// unchangedSince reports whether no change made through the mount since
// the epoch was epoch can have changed inode ino's attributes.
func (dc *dirCache) unchangedSince(ino, epoch uint64) bool {
	if dc.ttl <= 0 {
		return false // touches are not recorded
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return dc.all.Load() <= epoch && dc.touched[ino].epoch <= epoch
}
