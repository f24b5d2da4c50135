package ds

import (
	"context"
	"errors"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/qos"
)

// admit waits for the QoS scheduler to let a request of n bytes through
// and returns the function to call when it is served. The request's tag
// is its capability's (verified already, so signed by the MDS): a client
// cannot claim another job's share or class. A full queue answers EBUSY.
func (s *Server) admit(ctx context.Context, tok *capability.Token, n int64) (func(), error) {
	tag := qos.Tag{Job: tok.Job, Class: qos.Class(tok.Class)}
	release, err := s.qos.Acquire(ctx, tag, n)
	switch {
	case err == nil:
		return release, nil
	case errors.Is(err, qos.ErrBusy):
		return nil, rpc.Errorf(syscall.EBUSY, "ds: "+err.Error())
	case errors.Is(err, qos.ErrClosed):
		return nil, rpc.Errorf(syscall.ESHUTDOWN, "ds: "+ErrClosed.Error())
	default:
		return nil, rpc.Errorf(syscall.EINTR, "ds: waiting for the qos scheduler: "+err.Error())
	}
}

// SetQoSPolicy applies a QoS policy (validated by the caller) to the
// requests that follow.
func (s *Server) SetQoSPolicy(p qos.Policy) { s.qos.SetPolicy(p) }

// QoSStats returns what the server's QoS scheduler served.
func (s *Server) QoSStats() qos.Stats { return s.qos.Stats() }
