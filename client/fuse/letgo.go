package fuse

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// fusectlMagic is the fusectl file system's statfs type.
const fusectlMagic = 0x65735543

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

// connEnded reports whether the kernel connection conn has ended: fusectl
// lists a connection until its last mount and open /dev/fuse are gone.
// known is false where fusectl is not mounted (then nobody can tell).
func connEnded(conn uint32) (ended, known bool) {
	if conn == 0 {
		return false, false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(fusectlDir, &st); err != nil || st.Type != fusectlMagic {
		return false, false
	}
	_, err := os.Stat(filepath.Join(fusectlDir, strconv.FormatUint(uint64(conn), 10)))
	if errors.Is(err, os.ErrNotExist) {
		return true, true
	}
	return false, err == nil
}
