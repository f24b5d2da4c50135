package mds

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Byte-range locks (rpc/lockmsg.go: fcntl/POSIX locks and flock) are soft
// state of the leader, like a data server's free space: they are not in
// the FSM, so an MDS restart or a change of leader drops them all (NFSv4
// would give clients a grace period to reclaim them; there is none yet).
// A lock belongs to a (session, owner) pair; a session has a lease that its
// client renews; the locks of a session whose lease lapsed (a crashed
// client) are dropped before any lock call is answered. The lease is
// Config.HeartbeatTimeout long: as long as a silent data server stays up.
//
// Conflicts follow POSIX: two locks conflict when their owners differ,
// their ranges overlap, they are of the same kind (flock locks only meet
// flock locks) and one of them is a write lock. Setting a lock replaces
// the owner's own locks in the range, splitting and merging as fcntl does.

// heldLock is a granted lock.
type heldLock struct {
	session uint64
	rpc.Lock
}

func (h *heldLock) sameOwner(session uint64, lk *rpc.Lock) bool {
	return h.session == session && h.Owner == lk.Owner && h.Flock == lk.Flock
}

func overlap(a, b *rpc.Lock) bool { return a.Start <= b.End && b.Start <= a.End }

// lockTable holds every granted lock and the sessions' leases.
type lockTable struct {
	ttl   time.Duration
	clock func() time.Time

	mu       sync.Mutex
	files    map[uint64][]heldLock // inode -> its locks
	sessions map[uint64]time.Time  // session -> lease expiry
}

func newLockTable(ttl time.Duration, clock func() time.Time) *lockTable {
	return &lockTable{ttl: ttl, clock: clock, files: map[uint64][]heldLock{}, sessions: map[uint64]time.Time{}}
}

// expireLocked drops the sessions whose lease lapsed and their locks.
func (t *lockTable) expireLocked(now time.Time) {
	var gone []uint64
	for s, until := range t.sessions {
		if now.After(until) {
			gone = append(gone, s)
			delete(t.sessions, s)
		}
	}
	if len(gone) == 0 {
		return
	}
	for ino, ls := range t.files {
		ls = slices.DeleteFunc(ls, func(h heldLock) bool { return slices.Contains(gone, h.session) })
		if len(ls) == 0 {
			delete(t.files, ino)
		} else {
			t.files[ino] = ls
		}
	}
}

// renew extends a session's lease.
func (t *lockTable) renew(session uint64) {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(now)
	t.sessions[session] = now.Add(t.ttl)
}

// conflictLocked returns a lock of another owner that conflicts with lk.
func (t *lockTable) conflictLocked(session, ino uint64, lk *rpc.Lock) (heldLock, bool) {
	for _, h := range t.files[ino] {
		if !h.sameOwner(session, lk) && h.Flock == lk.Flock && overlap(&h.Lock, lk) &&
			(h.Type == syscall.F_WRLCK || lk.Type == syscall.F_WRLCK) {
			return h, true
		}
	}
	return heldLock{}, false
}

// get answers F_GETLK: a conflicting lock, or lk with type F_UNLCK.
func (t *lockTable) get(session, ino uint64, lk rpc.Lock) rpc.Lock {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(now)
	if h, ok := t.conflictLocked(session, ino, &lk); ok {
		return h.Lock
	}
	lk.Type = syscall.F_UNLCK
	return lk
}

// set answers F_SETLK: it grants, changes or (F_UNLCK) releases lk, or
// fails with EAGAIN naming the conflicting lock.
func (t *lockTable) set(session, ino uint64, lk rpc.Lock) error {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(now)
	if lk.Type != syscall.F_UNLCK {
		if h, ok := t.conflictLocked(session, ino, &lk); ok {
			return errf(syscall.EAGAIN, "inode %d: bytes %d-%s are locked by pid %d of another owner", ino, h.Start, endString(h.End), h.Pid)
		}
		t.sessions[session] = now.Add(t.ttl) // taking a lock is a sign of life
	}
	ls := t.punchLocked(session, ino, &lk)
	if lk.Type != syscall.F_UNLCK {
		ls = mergeInsert(ls, heldLock{session: session, Lock: lk})
	}
	if len(ls) == 0 {
		delete(t.files, ino)
	} else {
		t.files[ino] = ls
	}
	return nil
}

// punchLocked removes the range of lk from the owner's locks on ino,
// splitting those that stick out of it, and returns the file's locks.
func (t *lockTable) punchLocked(session, ino uint64, lk *rpc.Lock) []heldLock {
	old := t.files[ino]
	out := make([]heldLock, 0, len(old)+1)
	for _, h := range old {
		if !h.sameOwner(session, lk) || !overlap(&h.Lock, lk) {
			out = append(out, h)
			continue
		}
		if h.Start < lk.Start {
			left := h
			left.End = lk.Start - 1
			out = append(out, left)
		}
		if h.End > lk.End {
			right := h
			right.Start = lk.End + 1
			out = append(out, right)
		}
	}
	return out
}

// mergeInsert adds n, merging it with the owner's locks of the same type
// that it touches.
func mergeInsert(ls []heldLock, n heldLock) []heldLock {
	touches := func(a, b *rpc.Lock) bool {
		return overlap(a, b) || (a.End != rpc.LockEOF && a.End+1 == b.Start) || (b.End != rpc.LockEOF && b.End+1 == a.Start)
	}
	out := ls[:0]
	for _, h := range ls {
		if h.sameOwner(n.session, &n.Lock) && h.Type == n.Type && touches(&h.Lock, &n.Lock) {
			n.Start, n.End = min(n.Start, h.Start), max(n.End, h.End)
			continue
		}
		out = append(out, h)
	}
	return append(out, n)
}

// release drops every lock of (session, owner) on ino, POSIX and flock.
func (t *lockTable) release(session, ino, owner uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := slices.DeleteFunc(t.files[ino], func(h heldLock) bool { return h.session == session && h.Owner == owner })
	if len(ls) == 0 {
		delete(t.files, ino)
	} else {
		t.files[ino] = ls
	}
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

// leaderOnly refuses lock calls on a node that is not the leader: only the
// leader's table is authoritative.
func (s *Server) leaderOnly() error {
	if s.node.raft.State() != raft.Leader {
		return errf(syscall.EAGAIN, "%v: locks are held by the leader", ErrNotLeader)
	}
	return nil
}

func (s *Server) lockGet(_ context.Context, r *rpc.LockReq) (*rpc.LockResp, error) {
	if err := s.leaderOnly(); err != nil {
		return nil, err
	}
	if err := checkLock(&r.Lock); err != nil {
		return nil, err
	}
	return &rpc.LockResp{Lock: s.locks.get(r.Session, r.Ino, r.Lock)}, nil
}

func (s *Server) lockSet(_ context.Context, r *rpc.LockReq) (*rpc.Empty, error) {
	if err := s.leaderOnly(); err != nil {
		return nil, err
	}
	if err := checkLock(&r.Lock); err != nil {
		return nil, err
	}
	if r.Lock.Type != syscall.F_UNLCK {
		s.fsm.mu.RLock()
		_, err := s.fsm.st.node(r.Ino)
		s.fsm.mu.RUnlock()
		if err != nil {
			return nil, err
		}
	}
	if err := s.locks.set(r.Session, r.Ino, r.Lock); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) lockRelease(_ context.Context, r *rpc.LockReq) (*rpc.Empty, error) {
	if err := s.leaderOnly(); err != nil {
		return nil, err
	}
	s.locks.release(r.Session, r.Ino, r.Lock.Owner)
	return &rpc.Empty{}, nil
}

func (s *Server) sessionRenew(_ context.Context, r *rpc.SessionReq) (*rpc.SessionResp, error) {
	if err := s.leaderOnly(); err != nil {
		return nil, err
	}
	s.locks.renew(r.Session)
	return &rpc.SessionResp{TTLMs: uint32(s.locks.ttl.Milliseconds())}, nil
}
