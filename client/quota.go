package client

import (
	"context"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// SetQuota sets the limits of a user's or project's quota (kind
// rpc.QuotaUser or rpc.QuotaProject); 0 is no limit, both 0 removes the
// quota. Only root may.
func (c *Client) SetQuota(ctx context.Context, kind uint8, id uint32, bytes, inodes uint64) (*rpc.QuotaResp, error) {
	var r rpc.QuotaResp
	if err := c.mds(ctx, rpc.MQuotaSet, &rpc.QuotaReq{Kind: kind, ID: id, Bytes: bytes, Inodes: inodes}, &r); err != nil {
		return nil, fmt.Errorf("set quota: %w", err)
	}
	return &r, nil
}

// Quota returns what a user or project uses and its limits.
func (c *Client) Quota(ctx context.Context, kind uint8, id uint32) (*rpc.QuotaResp, error) {
	var r rpc.QuotaResp
	if err := c.mds(ctx, rpc.MQuotaGet, &rpc.QuotaReq{Kind: kind, ID: id}, &r); err != nil {
		return nil, fmt.Errorf("quota: %w", err)
	}
	return &r, nil
}

// QuotaRoom returns the committed size of file ino and how many bytes more
// its owner's and project's byte quotas allow (rpc.NoQuotaLimit: no limit).
func (c *Client) QuotaRoom(ctx context.Context, ino uint64) (*rpc.QuotaRoomResp, error) {
	var r rpc.QuotaRoomResp
	if err := c.mds(ctx, rpc.MQuotaRoom, &rpc.QuotaRoomReq{Ino: ino}, &r); err != nil {
		return nil, fmt.Errorf("quota room of inode %d: %w", ino, err)
	}
	return &r, nil
}

// SetProject sets the quota project of name: a directory's is inherited
// by what is created in it from then on. Only root may.
func (c *Client) SetProject(ctx context.Context, name string, project uint32) error {
	a, err := c.walk(ctx, name, true)
	if err == nil {
		err = c.mds(ctx, rpc.MProjectSet, &rpc.ProjectReq{Ino: a.Ino, Project: project}, &rpc.AttrResp{})
	}
	return pathErr("set project", name, err)
}
