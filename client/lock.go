package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// session is this client's identity for byte-range locks. Its lease is
// renewed while the client lives, from the first lock on; if the client
// dies, the MDS drops its locks when the lease lapses.
type session struct {
	id uint64

	mu      sync.Mutex
	started bool
	stop    chan struct{}
	done    chan struct{}
}

func newSession() *session {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	id := binary.LittleEndian.Uint64(b[:]) | 1
	return &session{id: id, stop: make(chan struct{}), done: make(chan struct{})}
}

// ensure starts the lease renewal, once.
func (c *Client) ensureSession(ctx context.Context) error {
	s := c.sess
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	var r rpc.SessionResp
	if err := c.mds(ctx, rpc.MSessionRenew, &rpc.SessionReq{Session: s.id}, &r); err != nil {
		return err
	}
	s.started = true
	go c.renew(time.Duration(r.TTLMs) * time.Millisecond)
	return nil
}

// renew keeps the session's lease alive until Close.
func (c *Client) renew(ttl time.Duration) {
	s := c.sess
	defer close(s.done)
	every := max(ttl/3, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			// A failed renewal is retried at the next tick; the lease
			// outlives two missed ticks.
			_ = c.mds(ctx, rpc.MSessionRenew, &rpc.SessionReq{Session: s.id}, &rpc.SessionResp{})
			cancel()
		}
	}
}

// closeSession stops the renewal and waits for it.
func (s *session) close() {
	s.mu.Lock()
	started := s.started
	s.started = false
	s.mu.Unlock()
	if started {
		close(s.stop)
		<-s.done
	}
}

// GetLock returns a lock that would conflict with lk on inode ino (F_GETLK),
// or lk with Type F_UNLCK if there is none.
func (c *Client) GetLock(ctx context.Context, ino uint64, lk rpc.Lock) (rpc.Lock, error) {
	var r rpc.LockResp
	err := c.mds(ctx, rpc.MLockGet, &rpc.LockReq{Session: c.sess.id, Ino: ino, Lock: lk}, &r)
	return r.Lock, err
}

// SetLock acquires, changes or (Type F_UNLCK) releases a lock on inode ino
// (F_SETLK). A conflict fails with EAGAIN unless wait is set (F_SETLKW):
// then it waits until the lock is granted or ctx ends (EINTR).
func (c *Client) SetLock(ctx context.Context, ino uint64, lk rpc.Lock, wait bool) error {
	if lk.Type != syscall.F_UNLCK {
		if err := c.ensureSession(ctx); err != nil {
			return err
		}
	}
	backoff := 5 * time.Millisecond
	for {
		err := c.mds(ctx, rpc.MLockSet, &rpc.LockReq{Session: c.sess.id, Ino: ino, Lock: lk}, &rpc.Empty{})
		if err == nil || !wait || rpc.ToErrno(err) != syscall.EAGAIN {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return rpc.Errorf(syscall.EINTR, "waiting for a lock: "+ctx.Err().Error())
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// ReleaseLocks drops every lock owner holds on inode ino (at close).
func (c *Client) ReleaseLocks(ctx context.Context, ino, owner uint64) error {
	return c.mds(ctx, rpc.MLockRelease, &rpc.LockReq{Session: c.sess.id, Ino: ino, Lock: rpc.Lock{Owner: owner}}, &rpc.Empty{})
}
