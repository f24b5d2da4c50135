package fuse

import (
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Directory attributes the MDS vouched for. After every change to a
// directory (a create, mkdir, unlink, rmdir in it) the kernel drops the
// directory's cached attributes and asks for them before it uses the
// directory again: a GETATTR per change. The MDS answers the mount's
// changes with the directory's attributes once the change was applied
// (client's plus calls), and the mount answers that GETATTR with them
// while they are younger than the attribute timeout, for what is left of
// it: the kernel could have cached them that long had it been given them
// with the change. A
// change whose answer does not carry them (rename, link, symlink, a
// setattr, an xattr, a failed call) forgets them.
type dirAttrs struct {
	ttl time.Duration

	mu sync.Mutex
	m  map[uint64]vouched
}

type vouched struct {
	attr rpc.Attr
	at   time.Time
}

// dirAttrsMax bounds the directories remembered; past it the oldest are
// dropped (they would have expired) or all.
const dirAttrsMax = 4096

func newDirAttrs(ttl time.Duration) *dirAttrs {
	return &dirAttrs{ttl: ttl, m: map[uint64]vouched{}}
}

// vouch records a, the attributes of directory a.Ino after a change, if
// not nil; else it forgets what it had for ino.
func (d *dirAttrs) vouch(ino uint64, a *rpc.Attr) {
	if d.ttl <= 0 {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if a == nil || a.Ino != ino || !a.IsDir() {
		delete(d.m, ino)
		return
	}
	if len(d.m) >= dirAttrsMax {
		for k, v := range d.m {
			if now.Sub(v.at) >= d.ttl {
				delete(d.m, k)
			}
		}
		if len(d.m) >= dirAttrsMax {
			clear(d.m)
		}
	}
	d.m[ino] = vouched{attr: *a, at: now}
}

// forget drops what is known of directory ino's attributes.
func (d *dirAttrs) forget(ino uint64) { d.vouch(ino, nil) }

// get returns the attributes of directory ino vouched for within the
// attribute timeout, and how long they may still be cached.
func (d *dirAttrs) get(ino uint64) (*rpc.Attr, time.Duration, bool) {
	if d.ttl <= 0 {
		return nil, 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[ino]
	if !ok {
		return nil, 0, false
	}
	left := d.ttl - time.Since(v.at)
	if left <= 0 {
		delete(d.m, ino)
		return nil, 0, false
	}
	a := v.attr
	return &a, left, true
}
