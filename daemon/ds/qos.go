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
	if s.cfg.QoSOff {
		return func() {}, nil
	}
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

// qosReport adds the scheduler's counters to a heartbeat.
func (s *Server) qosReport(req *rpc.HeartbeatReq) {
	st := s.qos.Stats()
	req.QoSVersion = st.PolicyVersion
	req.QoSInflight, req.QoSQueued = uint32(st.Inflight), uint32(st.Queued)
	for _, j := range st.Jobs {
		c, err := qos.ParseClass(j.Class)
		if err != nil || j.Requested == 0 {
			continue
		}
		req.QoSServed = append(req.QoSServed, rpc.QoSServed{Job: j.Job, Class: uint8(c), Bytes: uint64(j.Served)})
		req.QoSRequested = append(req.QoSRequested, rpc.QoSServed{Job: j.Job, Class: uint8(c), Bytes: uint64(j.Requested)})
	}
}

// qosApply applies the policy a heartbeat's answer carries. One the
// server cannot parse (from a newer MDS) is logged and the old one stays.
func (s *Server) qosApply(resp *rpc.HeartbeatResp) {
	if len(resp.QoSPolicy) == 0 || resp.QoSVersion == s.qos.Policy().Version {
		return
	}
	p, err := qos.ParsePolicy(resp.QoSPolicy)
	if err != nil {
		s.log.Error("qos_policy_refused", "version", resp.QoSVersion, "err", err)
		return
	}
	p.Version = resp.QoSVersion
	s.qos.SetPolicy(p)
	s.log.Info("qos_policy_applied", "version", p.Version)
}

// SetQoSPolicy applies a QoS policy (validated by the caller) to the
// requests that follow.
func (s *Server) SetQoSPolicy(p qos.Policy) { s.qos.SetPolicy(p) }

// QoSStats returns what the server's QoS scheduler served.
func (s *Server) QoSStats() qos.Stats { return s.qos.Stats() }

// QoSPolicy returns the QoS policy the server applies.
func (s *Server) QoSPolicy() qos.Policy { return s.qos.Policy() }
