package client

import (
	"context"
	"errors"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// getattrsInflight is how many MGetattrMany calls one identity may have
// out at once: getattrs made meanwhile queue and go in the next call.
const getattrsInflight = 4

// getattr asks the MDS for the attributes of inode ino. Getattrs made at
// the same time by the same identity (the stats of a program's threads
// or of a mount's processes) are coalesced into MGetattrMany calls
// (rpc.Coalescer): under load one round trip carries many; alone, a
// getattr goes out at once.
func (c *Client) getattr(ctx context.Context, ino uint64) (*rpc.Attr, error) {
	if c.noAttrs.Load() {
		return c.getattrOne(ctx, ino)
	}
	it, err := c.getattrs.Do(ctx, c.identityKey(ctx), ino)
	if errors.Is(err, rpc.ErrCoalescerClosed) {
		return c.getattrOne(ctx, ino) // a call after Close, sent as before
	}
	if err != nil {
		return nil, err
	}
	return it.Result()
}

// getattrOne asks for one inode's attributes in an MGetattr call of its own.
func (c *Client) getattrOne(ctx context.Context, ino uint64) (*rpc.Attr, error) {
	var r rpc.AttrResp
	if err := c.mds(ctx, rpc.MGetattr, &rpc.InoReq{Ino: ino}, &r); err != nil {
		return nil, err
	}
	return &r.Attr, nil
}

// getattrBatch is the Coalescer's batch call: one MGetattrMany, or, from
// an MDS that does not know it (an older version), one MGetattr per inode.
func (c *Client) getattrBatch(ctx context.Context, inos []uint64) ([]rpc.AttrItem, error) {
	if !c.noAttrs.Load() {
		var r rpc.GetattrManyResp
		err := c.mds(ctx, rpc.MGetattrMany, &rpc.GetattrManyReq{Inos: inos}, &r)
		if err == nil {
			return r.Items, nil
		}
		if !unknownCall(err) {
			return nil, err
		}
		c.noAttrs.Store(true)
	}
	out := make([]rpc.AttrItem, len(inos))
	for i, ino := range inos {
		a, err := c.getattrOne(ctx, ino)
		out[i] = rpc.AttrResult(a, err)
	}
	return out, nil
}
