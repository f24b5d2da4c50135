package client

import (
	"context"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// QoSPolicy returns the cluster's QoS policy: its version (0: the
// default, never set) and its JSON (qos.Policy).
func (c *Client) QoSPolicy(ctx context.Context) (*rpc.QoSPolicyResp, error) {
	var r rpc.QoSPolicyResp
	if err := c.mds(ctx, rpc.MQoSPolicyGet, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("qos policy: %w", err)
	}
	return &r, nil
}

// SetQoSPolicy makes doc (JSON, qos.Policy) the cluster's QoS policy and
// returns it with its new version. Only root may. A bad document fails
// with EINVAL and the reason; the policy in force stays.
func (c *Client) SetQoSPolicy(ctx context.Context, doc []byte) (*rpc.QoSPolicyResp, error) {
	var r rpc.QoSPolicyResp
	if err := c.mds(ctx, rpc.MQoSPolicySet, &rpc.QoSPolicyReq{Doc: doc}, &r); err != nil {
		return nil, fmt.Errorf("set qos policy: %w", err)
	}
	return &r, nil
}

// QoSStatus returns what every data server's QoS scheduler served.
func (c *Client) QoSStatus(ctx context.Context) (*rpc.QoSStatusResp, error) {
	var r rpc.QoSStatusResp
	if err := c.mds(ctx, rpc.MQoSStatus, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("qos status: %w", err)
	}
	return &r, nil
}

// ReportDrain reports one node's drain backlog of a job tier to the
// bandwidth ledger. Only node daemons (the agent) and admins may.
func (c *Client) ReportDrain(ctx context.Context, req *rpc.QoSDrainReq) error {
	if err := c.mds(ctx, rpc.MQoSDrain, req, &rpc.Empty{}); err != nil {
		return fmt.Errorf("qos drain report of job %d: %w", req.Job, err)
	}
	return nil
}
