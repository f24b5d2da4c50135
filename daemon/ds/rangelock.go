package ds

import "sync"

// rangeLock is a reader/writer lock over ranges of block numbers. Shared
// holders (reads) may overlap each other; an exclusive holder (a write, a
// truncate) overlaps nobody. Writes to disjoint blocks of one component
// therefore run in parallel while a write that read-modify-writes a block
// excludes everyone else from that block, and a read never sees a block
// whose data and CRC are half updated. The zero value is unlocked.
type rangeLock struct {
	mu      sync.Mutex
	cond    sync.Cond
	held    []lockSpan
	waiters int
}

type lockSpan struct {
	lo, hi uint64 // inclusive block numbers
	excl   bool
}

func (a lockSpan) conflicts(b lockSpan) bool {
	return a.lo <= b.hi && b.lo <= a.hi && (a.excl || b.excl)
}

// lock blocks until the blocks lo..hi (inclusive) can be held, shared or
// exclusively, and holds them.
func (l *rangeLock) lock(lo, hi uint64, excl bool) {
	s := lockSpan{lo, hi, excl}
	l.mu.Lock()
	if l.cond.L == nil {
		l.cond.L = &l.mu
	}
	for l.blocked(s) {
		l.waiters++
		l.cond.Wait()
		l.waiters--
	}
	l.held = append(l.held, s)
	l.mu.Unlock()
}

func (l *rangeLock) blocked(s lockSpan) bool {
	for _, h := range l.held {
		if h.conflicts(s) {
			return true
		}
	}
	return false
}

// unlock releases a span taken by lock with the same arguments.
func (l *rangeLock) unlock(lo, hi uint64, excl bool) {
	s := lockSpan{lo, hi, excl}
	l.mu.Lock()
	for i, h := range l.held {
		if h == s {
			last := len(l.held) - 1
			l.held[i] = l.held[last]
			l.held = l.held[:last]
			if l.waiters > 0 {
				l.cond.Broadcast()
			}
			l.mu.Unlock()
			return
		}
	}
	l.mu.Unlock()
	panic("ds: unlock of a block range that is not locked")
}
