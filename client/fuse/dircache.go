package fuse

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Statahead. When many names of one directory are looked up in a short
// time (ls -l, find, a job stat'ing its inputs), one listing of the
// directory with every entry's attributes replaces a lookup per name: the
// next lookups are answered from it while it is younger than the entry
// timeout. The answer carries the listing's remaining age as its cache
// timeouts, so the kernel never holds a name or attributes longer than
// EntryTimeout after the MDS gave them, as if it had looked the name up
// when the listing was made. Only names found are answered; a name not in
// the listing is asked of the MDS. Any change made through this mount
// (a write, create, unlink, rename, setattr...) makes every listing stale.
const (
	stataheadAfter = 8     // found lookups in a directory that trigger a listing
	stataheadMax   = 16384 // larger directories are not listed
	stataheadDirs  = 256   // listings kept at once
)

// dirCache holds the listings.
type dirCache struct {
	fsys *fileSystem
	ttl  time.Duration

	// epoch counts the changes made through this mount; a listing made
	// before the last change is stale.
	epoch atomic.Uint64

	mu   sync.Mutex
	dirs map[uint64]*listing
}

// listing is one directory's lookups and listing.
type listing struct {
	hits    int       // lookups that found a name, since window
	window  time.Time // start of the counting window
	ents    map[string]rpc.Attr
	made    time.Time // when the listing was asked for
	epoch   uint64    // the epoch it was asked for in
	loading bool
	skip    time.Time // too large: do not list before this
}

func newDirCache(fsys *fileSystem, ttl time.Duration) *dirCache {
	return &dirCache{fsys: fsys, ttl: ttl, dirs: map[uint64]*listing{}}
}

// changed makes every listing stale.
func (dc *dirCache) changed() { dc.epoch.Add(1) }

// lookup answers name in directory parent from a fresh listing, with how
// long the answer may be cached.
func (dc *dirCache) lookup(parent uint64, name string) (*rpc.Attr, time.Duration, bool) {
	if dc.ttl <= 0 {
		return nil, 0, false
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	l := dc.dirs[parent]
	if l == nil || l.ents == nil || l.epoch != dc.epoch.Load() {
		return nil, 0, false
	}
	left := dc.ttl - time.Since(l.made)
	if left <= 0 {
		l.ents = nil
		return nil, 0, false
	}
	a, ok := l.ents[name]
	if !ok {
		return nil, 0, false
	}
	return &a, left, true
}

// found counts a lookup in parent that the MDS answered with a name, and
// starts listing parent after stataheadAfter of them within the entry
// timeout.
func (dc *dirCache) found(parent uint64) {
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
	if l.hits < stataheadAfter || l.loading || now.Before(l.skip) {
		return
	}
	l.hits, l.window, l.loading = 0, now, true
	epoch := dc.epoch.Load()
	dc.fsys.bg.Add(1)
	go func() {
		defer dc.fsys.bg.Done()
		dc.load(parent, l, now, epoch)
	}()
}

// load lists parent and keeps the listing if nothing changed meanwhile.
func (dc *dirCache) load(parent uint64, l *listing, made time.Time, epoch uint64) {
	ents, more, err := dc.fsys.c.ReadDirPage(dc.fsys.ctx, parent, "", stataheadMax)
	dc.mu.Lock()
	defer dc.mu.Unlock()
	l.loading = false
	switch {
	case err != nil:
		return
	case more:
		l.skip = made.Add(dc.ttl)
		return
	}
	m := make(map[string]rpc.Attr, len(ents))
	for _, e := range ents {
		m[e.Name] = e.Attr
	}
	l.ents, l.made, l.epoch = m, made, epoch
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
