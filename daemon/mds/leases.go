package mds

import (
	"context"
	"sync"
	"time"

	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// leases are the lock sessions' leases, soft state of the leader. A session
// the leader has not heard from since it took office is given one lease
// from then: after a restart or a change of leader, clients keep their
// locks if they renew within a lease (a grace period, as NFSv4's).
type leases struct {
	ttl   time.Duration
	clock func() time.Time

	mu    sync.Mutex
	since time.Time            // when this node became leader
	until map[uint64]time.Time // session -> lease expiry
}

func newLeases(ttl time.Duration, clock func() time.Time) *leases {
	return &leases{ttl: ttl, clock: clock, until: map[uint64]time.Time{}}
}

// takeOffice starts the grace period: every session's lease runs from now.
func (l *leases) takeOffice() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = l.clock()
	clear(l.until)
}

// office returns when this node last became leader.
func (l *leases) office() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.since
}

// renew extends a session's lease.
func (l *leases) renew(session uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until[session] = l.clock().Add(l.ttl)
}

// lapsed returns the sessions among held whose lease has run out.
func (l *leases) lapsed(held map[uint64]bool) []uint64 {
	now := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []uint64
	for s := range held {
		until, ok := l.until[s]
		if !ok {
			until = l.since.Add(l.ttl)
		}
		if now.After(until) {
			out = append(out, s)
			delete(l.until, s)
		}
	}
	return out
}

// expireSessions drops the locks of every session whose lease lapsed, so
// that no call is answered with a dead client's lock.
func (s *Server) expireSessions() error {
	s.fsm.mu.RLock()
	held := s.fsm.st.locks.sessions()
	s.fsm.mu.RUnlock()
	for _, sess := range s.leases.lapsed(held) {
		s.log.Info("lock_session_lapsed", "session", sess)
		if _, err := s.apply(cmdSessionDrop, &sessionCmd{Session: sess}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) lockGet(_ context.Context, r *rpc.LockReq) (*rpc.LockResp, error) {
	if err := checkLock(&r.Lock); err != nil {
		return nil, err
	}
	if err := s.expireSessions(); err != nil {
		return nil, err
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return &rpc.LockResp{Lock: s.fsm.st.locks.get(r.Session, r.Ino, r.Lock)}, nil
}

func (s *Server) lockSet(_ context.Context, r *rpc.LockReq) (*rpc.Empty, error) {
	if err := checkLock(&r.Lock); err != nil {
		return nil, err
	}
	if err := s.expireSessions(); err != nil {
		return nil, err
	}
	if r.Lock.Type != syscall.F_UNLCK {
		s.leases.renew(r.Session) // taking a lock is a sign of life
	}
	if _, err := s.apply(cmdLockSet, &lockCmd{Session: r.Session, Ino: r.Ino, Lock: r.Lock}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) lockRelease(_ context.Context, r *rpc.LockReq) (*rpc.Empty, error) {
	if _, err := s.apply(cmdLockRelease, &lockCmd{Session: r.Session, Ino: r.Ino, Lock: rpc.Lock{Owner: r.Lock.Owner}}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

func (s *Server) sessionRenew(_ context.Context, r *rpc.SessionReq) (*rpc.SessionResp, error) {
	s.leases.renew(r.Session)
	return &rpc.SessionResp{TTLMs: uint32(s.leases.ttl.Milliseconds())}, nil
}
