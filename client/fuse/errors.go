package fuse

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Sentinel errors of mounting and unmounting.
var (
	// ErrBusy is an unmount refused because a process has a file open or
	// its working directory in the mount.
	ErrBusy = errors.New("fuse: target is busy")
	// ErrDetached is an unmount that found the mount busy and detached it
	// (lazy unmount): it is served until its last user lets go.
	ErrDetached = errors.New("fuse: target is busy: detached it (lazy unmount)")
	// ErrNotMounted is an unmount of a directory that is no FUSE mount.
	ErrNotMounted = errors.New("fuse: not mounted")
	// ErrNoConn is an Abort of a mount whose kernel connection is unknown.
	ErrNoConn = errors.New("fuse: connection number unknown")
)

// errnoOf translates an error of the client library into the errno the
// kernel gets. This is the only place errors become syscall.Errno.
func errnoOf(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, rpc.ErrUnavailable):
		return syscall.EIO
	}
	return rpc.ToErrno(err)
}

// expected reports whether an errno is an ordinary answer (a missing name,
// a full directory) rather than a failure worth a log line.
func expected(e syscall.Errno) bool {
	switch e {
	case 0, syscall.ENOENT, syscall.EEXIST, syscall.ENOTEMPTY, syscall.ENODATA, syscall.ERANGE,
		syscall.EISDIR, syscall.ENOTDIR, syscall.EAGAIN, syscall.EINTR, syscall.EINVAL, syscall.EPERM,
		syscall.EACCES, syscall.EOPNOTSUPP, syscall.ENAMETOOLONG, syscall.EXDEV, syscall.EDQUOT:
		return true
	}
	return false
}

// limiter logs failures at most once per interval, counting what it drops,
// so a dead data server cannot flood the log from the I/O path.
type limiter struct {
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

// fail logs err of op on inode ino (rate limited) unless it is an ordinary
// answer, and returns its errno.
func (l *limiter) fail(op string, ino uint64, err error) syscall.Errno {
	e := errnoOf(err)
	if expected(e) {
		return e
	}
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.last) < l.every {
		l.dropped++
		l.mu.Unlock()
		return e
	}
	dropped := l.dropped
	l.last, l.dropped = now, 0
	l.mu.Unlock()
	l.log.Warn("fuse request failed", "op", op, "inode", ino, "errno", e.Error(), "err", err, "suppressed", dropped)
	return e
}
