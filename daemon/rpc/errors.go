package rpc

import (
	"errors"
	"syscall"
)

// Error is a failed call as it crosses the wire: a POSIX errno a client
// can hand to a kernel (FUSE) or a shell, and a one-line message.
type Error struct {
	Errno     uint32
	Msg       string
	Redirect  string // set by an MDS that is not the leader: the leader's RPC address, if known
	NotLeader bool   // the call reached an MDS that is not (or stopped being) the leader: retry at the leader
}

func (e *Error) Error() string { return e.Msg }

// Is lets errors.Is(err, syscall.ENOENT) match a remote error.
func (e *Error) Is(target error) bool {
	var n syscall.Errno
	return errors.As(target, &n) && uint32(n) == e.Errno
}

// ErrnoValue returns the error's POSIX error number.
func (e *Error) ErrnoValue() syscall.Errno { return syscall.Errno(e.Errno) }

// Errorf builds an Error with errno and message.
func Errorf(errno syscall.Errno, msg string) *Error {
	return &Error{Errno: uint32(errno), Msg: msg}
}

// ToErrno extracts the POSIX errno of err: the errno of an *Error or a
// syscall.Errno anywhere in its chain, EIO for anything else, 0 for nil.
func ToErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return syscall.Errno(e.Errno)
	}
	var n syscall.Errno
	if errors.As(err, &n) {
		return n
	}
	return syscall.EIO
}

// ErrCredential is wrapped when the caller's credential could not be made
// (munged unreachable, no cluster secret): nothing was sent.
var ErrCredential = errors.New("rpc: no credential")

// ErrUnavailable is wrapped by transport failures (peer down, timeout).
var ErrUnavailable = errors.New("rpc: peer unavailable")

// ErrConfig is wrapped by every ServerConfig.Validate error.
var ErrConfig = errors.New("rpc: invalid config")
