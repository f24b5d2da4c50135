package mds

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Byte-range locks (rpc/lockmsg.go: fcntl/POSIX locks and flock) are part
// of the FSM: every grant and release goes through raft, so a restart of
// the MDS, and later a change of leader, keeps them (losing a lock
// silently is data corruption for ROMIO's data sieving). A lock belongs to
// a (session, owner) pair. Sessions' leases are soft state of the leader
// (leases.go); when one lapses the leader applies a command that drops the
// session's locks.
//
// Conflicts follow POSIX: two locks conflict when their owners differ,
// their ranges overlap, they are of the same kind (flock locks only meet
// flock locks) and one of them is a write lock. Setting a lock replaces
// the owner's own locks in the range, splitting and merging as fcntl does.
//
// Copy-on-write: a snapshot shares the per-inode slices, so they are never
// modified in place; every change stores a new slice.

// heldLock is a granted lock. Fields are exported for the snapshot codec.
type heldLock struct {
	Session uint64
	Lock    rpc.Lock
}

func (h *heldLock) sameOwner(session uint64, lk *rpc.Lock) bool {
	return h.Session == session && h.Lock.Owner == lk.Owner && h.Lock.Flock == lk.Flock
}

func overlap(a, b *rpc.Lock) bool { return a.Start <= b.End && b.Start <= a.End }

// lockTable maps an inode to its granted locks.
type lockTable map[uint64][]heldLock

// put stores the locks of ino, dropping the entry when there are none.
func (t lockTable) put(ino uint64, ls []heldLock) {
	if len(ls) == 0 {
		delete(t, ino)
	} else {
		t[ino] = ls
	}
}

// conflict returns a lock of another owner that conflicts with lk.
func (t lockTable) conflict(session, ino uint64, lk *rpc.Lock) (heldLock, bool) {
	for _, h := range t[ino] {
		if !h.sameOwner(session, lk) && h.Lock.Flock == lk.Flock && overlap(&h.Lock, lk) &&
			(h.Lock.Type == syscall.F_WRLCK || lk.Type == syscall.F_WRLCK) {
			return h, true
		}
	}
	return heldLock{}, false
}

// get answers F_GETLK: a conflicting lock, or lk with type F_UNLCK.
func (t lockTable) get(session, ino uint64, lk rpc.Lock) rpc.Lock {
	if h, ok := t.conflict(session, ino, &lk); ok {
		return h.Lock
	}
	lk.Type = syscall.F_UNLCK
	return lk
}

// set answers F_SETLK: it grants, changes or (F_UNLCK) releases lk, or
// fails with EAGAIN naming the conflicting lock.
func (t lockTable) set(session, ino uint64, lk rpc.Lock) error {
	if lk.Type != syscall.F_UNLCK {
		if h, ok := t.conflict(session, ino, &lk); ok {
			return errf(syscall.EAGAIN, "inode %d: bytes %d-%s are locked by pid %d of another owner", ino, h.Lock.Start, endString(h.Lock.End), h.Lock.Pid)
		}
	}
	ls := t.punch(session, ino, &lk)
	if lk.Type != syscall.F_UNLCK {
		ls = mergeInsert(ls, heldLock{Session: session, Lock: lk})
	}
	t.put(ino, ls)
	return nil
}

// punch returns a new slice of ino's locks with the range of lk removed
// from the owner's locks, splitting those that stick out of it.
func (t lockTable) punch(session, ino uint64, lk *rpc.Lock) []heldLock {
	old := t[ino]
	out := make([]heldLock, 0, len(old)+1)
	for _, h := range old {
		if !h.sameOwner(session, lk) || !overlap(&h.Lock, lk) {
			out = append(out, h)
			continue
		}
		if h.Lock.Start < lk.Start {
			left := h
			left.Lock.End = lk.Start - 1
			out = append(out, left)
		}
		if h.Lock.End > lk.End {
			right := h
			right.Lock.Start = lk.End + 1
			out = append(out, right)
		}
	}
	return out
}

// mergeInsert adds n to ls (a slice it may modify), merging it with the
// owner's locks of the same type that it touches.
func mergeInsert(ls []heldLock, n heldLock) []heldLock {
	touches := func(a, b *rpc.Lock) bool {
		return overlap(a, b) || (a.End != rpc.LockEOF && a.End+1 == b.Start) || (b.End != rpc.LockEOF && b.End+1 == a.Start)
	}
	out := ls[:0]
	for _, h := range ls {
		if h.sameOwner(n.Session, &n.Lock) && h.Lock.Type == n.Lock.Type && touches(&h.Lock, &n.Lock) {
			n.Lock.Start, n.Lock.End = min(n.Lock.Start, h.Lock.Start), max(n.Lock.End, h.Lock.End)
			continue
		}
		out = append(out, h)
	}
	return append(out, n)
}

// release drops every lock of (session, owner) on ino, POSIX and flock.
func (t lockTable) release(session, ino, owner uint64) {
	t.put(ino, slices.DeleteFunc(slices.Clone(t[ino]), func(h heldLock) bool {
		return h.Session == session && h.Lock.Owner == owner
	}))
}

// dropSession drops every lock of session.
func (t lockTable) dropSession(session uint64) {
	for ino, ls := range t {
		if slices.ContainsFunc(ls, func(h heldLock) bool { return h.Session == session }) {
			t.put(ino, slices.DeleteFunc(slices.Clone(ls), func(h heldLock) bool { return h.Session == session }))
		}
	}
}

// sessions returns the sessions that hold locks.
func (t lockTable) sessions() map[uint64]bool {
	out := map[uint64]bool{}
	for _, ls := range t {
		for _, h := range ls {
			out[h.Session] = true
		}
	}
	return out
}

func endString(end uint64) string {
	if end == rpc.LockEOF {
		return "EOF"
	}
	return fmt.Sprint(end)
}

// checkLock validates a lock from the wire.
func checkLock(lk *rpc.Lock) error {
	switch {
	case lk.Type != syscall.F_RDLCK && lk.Type != syscall.F_WRLCK && lk.Type != syscall.F_UNLCK:
		return errf(syscall.EINVAL, "lock type %d is not F_RDLCK, F_WRLCK or F_UNLCK", lk.Type)
	case lk.Start > lk.End:
		return errf(syscall.EINVAL, "lock range %d-%d is empty", lk.Start, lk.End)
	}
	if lk.Flock {
		lk.Start, lk.End = 0, rpc.LockEOF
	}
	return nil
}

// The FSM side: lock commands.

// lockCmd sets (cmdLockSet) or releases all of an owner's (cmdLockRelease)
// locks on an inode.
type lockCmd struct {
	Session uint64
	Ino     uint64
	Lock    rpc.Lock
}

// sessionCmd drops a lapsed session's locks.
type sessionCmd struct {
	Session uint64
}

func (st *state) applyLockSet(c *lockCmd) result {
	if c.Lock.Type != syscall.F_UNLCK {
		if _, err := st.node(c.Ino); err != nil {
			return fail(err)
		}
	}
	return fail(st.locks.set(c.Session, c.Ino, c.Lock))
}

func (st *state) applyLockRelease(c *lockCmd) result {
	st.locks.release(c.Session, c.Ino, c.Lock.Owner)
	return result{}
}

func (st *state) applySessionDrop(c *sessionCmd) result {
	st.locks.dropSession(c.Session)
	return result{}
}
