package client

import (
	"context"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Tier returns the registry's record of a job's tier (ENOENT if none).
func (c *Client) Tier(ctx context.Context, job uint32) (*rpc.TierRecord, error) {
	var r rpc.TierResp
	if err := c.mds(ctx, rpc.MTierGet, &rpc.TierReq{Job: job}, &r); err != nil {
		return nil, fmt.Errorf("tier of job %d: %w", job, err)
	}
	return &r.Tier, nil
}

// Tiers returns every record of the tier registry, by job id.
func (c *Client) Tiers(ctx context.Context) ([]rpc.TierRecord, error) {
	var r rpc.TierListResp
	if err := c.mds(ctx, rpc.MTierList, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("tiers: %w", err)
	}
	return r.Tiers, nil
}

// PutTier sends a node agent's report on a tier to the registry; req.Cap
// must be an admin capability signed with the cluster secret.
func (c *Client) PutTier(ctx context.Context, req *rpc.TierPutReq) error {
	if err := c.mds(ctx, rpc.MTierPut, req, &rpc.Empty{}); err != nil {
		return fmt.Errorf("tier put of job %d: %w", req.Job, err)
	}
	return nil
}
