package client

import (
	"context"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// AddVoter adds an MDS replica (its raft id and address) to the raft
// group. The MDS refuses (EHOSTUNREACH) a replica whose raft address does
// not answer, unless force.
func (c *Client) AddVoter(ctx context.Context, id, raftAddr string, force bool) (*rpc.ClusterResp, error) {
	var r rpc.ClusterResp
	if err := c.mds(ctx, rpc.MAddVoter, &rpc.VoterReq{ID: id, RaftAddr: raftAddr, Force: force}, &r); err != nil {
		return nil, fmt.Errorf("add mds %s: %w", id, err)
	}
	return &r, nil
}

// RemoveVoter removes an MDS replica from the raft group; the last voter
// cannot be removed (EBUSY).
func (c *Client) RemoveVoter(ctx context.Context, id string) (*rpc.ClusterResp, error) {
	var r rpc.ClusterResp
	if err := c.mds(ctx, rpc.MRemoveVoter, &rpc.VoterReq{ID: id}, &r); err != nil {
		return nil, fmt.Errorf("remove mds %s: %w", id, err)
	}
	return &r, nil
}
