package mds

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

// qosRecord is the cluster's QoS policy in the FSM: its version (0: never
// set, qos.DefaultPolicy applies) and its canonical JSON, version
// included. Data servers get it with their heartbeats (qosBeat).
type qosRecord struct {
	Version uint64
	Doc     []byte
}

// qosPolicyCmd replaces the QoS policy with Doc (validated by the leader
// first; Apply validates again, deterministically, and refuses a bad one).
type qosPolicyCmd struct {
	Doc []byte
}

func (st *state) applyQoSPolicy(c *qosPolicyCmd) result {
	p, err := qos.ParsePolicy(c.Doc)
	if err != nil {
		return fail(errf(syscall.EINVAL, "%v", err))
	}
	p.Version = st.qos.Version + 1
	doc, err := json.Marshal(&p)
	if err != nil {
		return fail(errf(syscall.EINVAL, "qos policy: %v", err))
	}
	st.qos = qosRecord{Version: p.Version, Doc: doc}
	return result{}
}

// policy returns the policy in force as its answer.
func (r qosRecord) resp() *rpc.QoSPolicyResp {
	if r.Version == 0 {
		doc, _ := json.Marshal(qos.DefaultPolicy()) // a map of plain values: cannot fail
		return &rpc.QoSPolicyResp{Doc: doc}
	}
	return &rpc.QoSPolicyResp{Version: r.Version, Doc: r.Doc}
}

// QoSPolicy returns the cluster's QoS policy (a stale read: any replica).
func (s *Server) QoSPolicy(_ context.Context) (*rpc.QoSPolicyResp, error) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return s.fsm.st.qos.resp(), nil
}

func (s *Server) qosPolicyGet(ctx context.Context, _ *rpc.Empty) (*rpc.QoSPolicyResp, error) {
	return s.QoSPolicy(ctx)
}

// SetQoSPolicy validates doc and makes it the cluster's QoS policy. A
// bad document is refused with EINVAL and the reason, and the policy in
// force stays. The caller's authority is checked by the caller (the RPC
// handler: root; the admin API: its own).
func (s *Server) SetQoSPolicy(_ context.Context, doc []byte) (*rpc.QoSPolicyResp, error) {
	if _, err := qos.ParsePolicy(doc); err != nil {
		return nil, errf(syscall.EINVAL, "%v", err)
	}
	if _, err := s.apply(cmdQoSPolicy, &qosPolicyCmd{Doc: doc}); err != nil {
		return nil, err
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	s.log.Info("qos_policy_set", "version", s.fsm.st.qos.Version)
	return s.fsm.st.qos.resp(), nil
}

func (s *Server) qosPolicySet(ctx context.Context, r *rpc.QoSPolicyReq) (*rpc.QoSPolicyResp, error) {
	if c := s.caller(ctx); !c.Root() {
		return nil, errf(syscall.EPERM, "qos policy: only root sets it")
	}
	return s.SetQoSPolicy(ctx, r.Doc)
}

// QoSStatus returns the policy's version, what every data server's
// scheduler served, as their last heartbeats to this MDS told, and the
// bandwidth ledger (ledger.go): the leader's view; a follower knows only
// the data servers that beat to it and the drains reported to it.
func (s *Server) QoSStatus(_ context.Context) (*rpc.QoSStatusResp, error) {
	s.fsm.mu.RLock()
	resp := &rpc.QoSStatusResp{Version: s.fsm.st.qos.Version}
	s.fsm.mu.RUnlock()
	now := s.clock()
	up := map[string]bool{}
	s.reg.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(s.reg.ds)) {
		d := s.reg.ds[id]
		if q := d.qos; q.ID != "" {
			resp.Servers = append(resp.Servers, q)
		}
		up[id] = s.reg.isUp(d, now)
	}
	s.reg.mu.Unlock()
	s.ledger.status(now, up, resp)
	return resp, nil
}

func (s *Server) qosStatus(ctx context.Context, _ *rpc.Empty) (*rpc.QoSStatusResp, error) {
	return s.QoSStatus(ctx)
}

// qosBeat adds the QoS policy to a heartbeat's answer when the data
// server applies another version.
func (s *Server) qosBeat(r *rpc.HeartbeatReq, resp *rpc.HeartbeatResp) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	q := s.fsm.st.qos
	resp.QoSVersion = q.Version
	if r.QoSVersion != q.Version && q.Version != 0 {
		resp.QoSPolicy = q.Doc
	}
}

// writeQoSMetrics writes the QoS series: the policy's version, and per
// data server its queue and the bytes served per class and job, as its
// last heartbeat told.
func (s *Server) writeQoSMetrics(w io.Writer, family func(name, typ, help string)) {
	st, _ := s.QoSStatus(context.Background()) // never fails
	family("strata_qos_policy_version", "gauge", "Version of the cluster's QoS policy (0: the default).")
	fmt.Fprintf(w, "strata_qos_policy_version %d\n", st.Version)
	family("strata_qos_ds_policy_version", "gauge", "Version of the QoS policy a data server applies.")
	for _, d := range st.Servers {
		fmt.Fprintf(w, "strata_qos_ds_policy_version{ds=%s} %d\n", label(d.ID), d.Version)
	}
	family("strata_qos_queued_requests", "gauge", "Reads and writes waiting in a data server's QoS scheduler.")
	for _, d := range st.Servers {
		fmt.Fprintf(w, "strata_qos_queued_requests{ds=%s} %d\n", label(d.ID), d.Queued)
	}
	family("strata_qos_served_bytes_total", "counter", "Bytes a data server's QoS scheduler let through, by class and job (job empty: none).")
	for _, d := range st.Servers {
		for _, j := range d.Served {
			fmt.Fprintf(w, "strata_qos_served_bytes_total{ds=%s,class=%s,job=%s} %d\n", label(d.ID), label(qos.Class(j.Class).String()), label(j.Job), j.Bytes)
		}
	}
	writeLedgerMetrics(w, family, st, s.clock())
}
