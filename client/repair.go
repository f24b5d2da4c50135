package client

import (
	"context"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// RebuildStatus returns the MDS rebuild manager's queue and progress
// (`strata admin rebuild status`).
func (c *Client) RebuildStatus(ctx context.Context) (*rpc.RebuildStatusResp, error) {
	var r rpc.RebuildStatusResp
	if err := c.mds(ctx, rpc.MRebuildStatus, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("rebuild status: %w", err)
	}
	return &r, nil
}

// ScrubStart has every data server that is up start a scrub pass and
// returns their state (`strata admin scrub start`).
func (c *Client) ScrubStart(ctx context.Context) (*rpc.ScrubStatusResp, error) {
	var r rpc.ScrubStatusResp
	if err := c.mds(ctx, rpc.MScrubStart, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("scrub start: %w", err)
	}
	return &r, nil
}

// ScrubStatus returns every data server's scrub progress and the damaged
// blocks being repaired or without redundancy to repair them from
// (`strata admin scrub status`).
func (c *Client) ScrubStatus(ctx context.Context) (*rpc.ScrubStatusResp, error) {
	var r rpc.ScrubStatusResp
	if err := c.mds(ctx, rpc.MScrubStatus, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("scrub status: %w", err)
	}
	return &r, nil
}

// DrainDS marks data server id draining: nothing new is placed on it and
// its components are moved away (`strata admin ds drain ID`). It fails,
// saying why, when some file's data would have nowhere to go. With cancel
// the server stops draining.
func (c *Client) DrainDS(ctx context.Context, id string, cancel bool) (*rpc.DSListResp, error) {
	var r rpc.DSListResp
	if err := c.mds(ctx, rpc.MDSDrain, &rpc.DrainReq{ID: id, Cancel: cancel}, &r); err != nil {
		return nil, fmt.Errorf("drain %s: %w", id, err)
	}
	return &r, nil
}

// ListDS returns the data servers with their state and how many
// components each holds (`strata admin ds list`).
func (c *Client) ListDS(ctx context.Context) (*rpc.DSListResp, error) {
	var r rpc.DSListResp
	if err := c.mds(ctx, rpc.MDSList, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("list data servers: %w", err)
	}
	return &r, nil
}

// GCScan has the MDS list every data server's components and remove those
// no inode references (not with dryRun), and returns its report
// (`strata admin gc`).
func (c *Client) GCScan(ctx context.Context, dryRun bool) (*rpc.GCReport, error) {
	var r rpc.GCReport
	if err := c.mds(ctx, rpc.MGCScan, &rpc.GCScanReq{DryRun: dryRun}, &r); err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	return &r, nil
}
