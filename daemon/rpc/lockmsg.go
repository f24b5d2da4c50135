package rpc

// Lock method names. Byte-range locks (fcntl/POSIX and flock) live in the
// MDS so they hold across mount points and nodes; a client's locks belong
// to its session, whose lease it renews while it holds any; a session that
// lapses (a crashed client) loses its locks.
const (
	MLockGet      = "mds.lock.get"
	MLockSet      = "mds.lock.set"
	MLockRelease  = "mds.lock.release"
	MSessionRenew = "mds.session.renew"
)

// LockEOF as a Lock's End means "to the end of the file, however it grows".
const LockEOF = ^uint64(0)

// Lock is one byte-range lock: bytes [Start, End] (inclusive) of a file,
// of Type syscall.F_RDLCK, F_WRLCK or F_UNLCK. Owner is the lock owner
// within the session (the kernel's lock owner, as FUSE gives it). Flock
// locks (flock(2)) cover the whole file and conflict only with flock locks.
type Lock struct {
	Start uint64
	End   uint64
	Type  uint32
	Owner uint64
	Pid   uint32
	Flock bool
}

// LockReq asks about or changes a lock of Session on Ino.
type LockReq struct {
	Session uint64
	Ino     uint64
	Lock    Lock
}

// LockResp answers LockGet with a conflicting lock (Type F_UNLCK if none).
type LockResp struct {
	Lock Lock
}

// SessionReq renews a session's lease.
type SessionReq struct {
	Session uint64
}

// SessionResp tells the client the lease's length.
type SessionResp struct {
	TTLMs uint32
}
