package fuse

import (
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// The attributes of an open file. An open fetches fresh attributes from
// the MDS (close-to-open), and a program that opens a file often asks for
// them at once (fstat: cat, cp, Go's os.ReadFile, Python's read()), after
// the kernel's copy was dropped by the open or by an earlier write. The
// mount answers such a GETATTR with the open's attributes (merged with
// what it wrote) while they are younger than the attribute timeout and no
// change made through the mount since can have touched them, as the
// kernel would have answered from its cache: one MDS call less for
// reading a small file back whole.

// askedAttr is when an open asked the MDS for attributes: the time and the
// dircache epoch before the call.
type askedAttr struct {
	at    time.Time
	epoch uint64
}

// cachedAttr returns the attributes the last open fetched, with how long
// they may still be cached, if they are still current.
func (of *openFile) cachedAttr() (*rpc.Attr, time.Duration, bool) {
	of.mu.Lock()
	asked := of.asked
	of.mu.Unlock()
	if asked.at.IsZero() {
		return nil, 0, false
	}
	left := of.fsys.opts.AttrTimeout - time.Since(asked.at)
	if left <= 0 || !of.fsys.dc.unchangedSince(of.ino, asked.epoch) {
		return nil, 0, false
	}
	return of.lastAttr(), left, true
}
