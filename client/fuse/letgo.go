package fuse

import (
	"sync"
	"time"
)

// letGo bounds what a mount does after its kernel connection has ended.
// Requests still in flight then (a RELEASE the kernel sent when a process
// closed its last descriptor) and the write back of files left open keep
// go-fuse's Serve, and so `strata mount`, running for as long as their MDS
// calls retry: with no MDS leader, 15 s per call. Once the connection is
// known to have ended, they get Options.UnmountTimeout; then the mount's
// context is cancelled, they fail at once, and serving ends.
type letGo struct {
	timeout time.Duration
	cancel  func() // cancels the mount's context

	mu     sync.Mutex
	timer  *time.Timer
	gaveUp bool
}

// ended starts the countdown (once): the kernel connection has ended.
func (l *letGo) ended() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		return
	}
	l.timer = time.AfterFunc(l.timeout, func() {
		l.mu.Lock()
		l.gaveUp = true
		l.mu.Unlock()
		l.cancel()
	})
}

// stop ends the countdown, when serving has ended; it reports whether the
// mount gave up on what was in flight.
func (l *letGo) stop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	return l.gaveUp
}
