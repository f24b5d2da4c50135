package mds

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Sentinel errors of the metadata server.
var (
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("mds: invalid config")
	// ErrNotLeader is returned by a change sent to a node that is not the
	// raft leader.
	ErrNotLeader = errors.New("mds: not leader")
	// ErrClosed is returned by calls on a closed or never started Server.
	ErrClosed = errors.New("mds: server closed")
	// ErrSnapshot is wrapped by errors reading a snapshot.
	ErrSnapshot = errors.New("mds: bad snapshot")
)

// errNoDataServers is placement's answer when no data server is up; its
// text is what a user sees after "create NAME: ".
var errNoDataServers = errors.New("no data servers are up")

// errf builds the wire error of a failed namespace operation: a POSIX errno
// and a one-line message naming the thing, printable by a CLI.
func errf(errno syscall.Errno, format string, args ...any) *rpc.Error {
	return rpc.Errorf(errno, fmt.Sprintf(format, args...))
}

// lostOffice reports whether err says that this node is not (or no
// longer) the raft leader: the caller should go to the leader.
func lostOffice(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

// raftError translates a failure of raft.Apply or Barrier into a wire
// error: EAGAIN when this node cannot take changes now (not the leader,
// shutting down) so that a client retries elsewhere or later.
func raftError(err error) error {
	switch {
	case lostOffice(err):
		// NotLeader makes the client fail over and retry, as it does for a
		// follower's answer: with leadership lost mid-commit the entry may
		// have been applied, so a retried create can answer EEXIST, as a
		// retried NFS create does.
		return &rpc.Error{Errno: uint32(syscall.EAGAIN), Msg: fmt.Sprintf("%v: %v", ErrNotLeader, err), NotLeader: true}
	case errors.Is(err, raft.ErrRaftShutdown):
		return rpc.Errorf(syscall.EAGAIN, fmt.Sprintf("%v: %v", ErrClosed, err))
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return rpc.Errorf(syscall.EAGAIN, fmt.Sprintf("mds: raft busy: %v", err))
	}
	return fmt.Errorf("mds: raft apply: %w", err)
}
