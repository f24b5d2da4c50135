package client

import (
	"context"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// This file holds the layout calls by inode for a pNFS front end (the NFS
// front end hands the layouts to kernel clients, which do the I/O
// themselves): the MDS calls File makes for its own I/O.

// LayoutGetIno returns inode ino's layout, a capability and attributes;
// with write the MDS counts a writer until LayoutReturnIno.
func (c *Client) LayoutGetIno(ctx context.Context, ino uint64, write bool) (*rpc.LayoutGetResp, error) {
	var r rpc.LayoutGetResp
	if err := c.mds(ctx, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Write: write}, &r); err != nil {
		return nil, inoErr("layoutget", ino, "", err)
	}
	return &r, nil
}

// LayoutReturnIno returns a layout LayoutGetIno granted.
func (c *Client) LayoutReturnIno(ctx context.Context, ino uint64, write bool) error {
	return inoErr("layoutreturn", ino, "", c.mds(ctx, rpc.MLayoutReturn, &rpc.LayoutReturnReq{Ino: ino, Write: write}, &rpc.Empty{}))
}

// LayoutCommitIno publishes what a writer made durable on the data
// servers: the size becomes at least end, the mtime mtime (unix ns).
func (c *Client) LayoutCommitIno(ctx context.Context, ino, gen, end uint64, mtime int64) (*rpc.Attr, error) {
	var r rpc.AttrResp
	req := rpc.LayoutCommitReq{Ino: ino, Gen: gen, End: end, Mtime: mtime}
	if err := c.mds(ctx, rpc.MLayoutCommit, &req, &r); err != nil {
		return nil, inoErr("layoutcommit", ino, "", err)
	}
	return &r.Attr, nil
}

// LayoutErrorIno reports failed component calls (LAYOUTERROR): the MDS
// marks the components stale, or refuses if the file could not be read
// without them, and answers with the layout as it now is.
func (c *Client) LayoutErrorIno(ctx context.Context, req rpc.LayoutErrorReq) (*rpc.LayoutGetResp, error) {
	var r rpc.LayoutGetResp
	if err := c.mds(ctx, rpc.MLayoutError, &req, &r); err != nil {
		return nil, inoErr("layouterror", req.Ino, "", err)
	}
	return &r, nil
}
