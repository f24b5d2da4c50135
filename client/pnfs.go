package client

import (
	"context"
	"fmt"
	"os"

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

// GrowIno makes every component of inode ino that is not stale (mirror
// copies too) hold its share of a file of size end, extending it with a
// hole where nobody wrote (rpc.DGrow), so that end may be published: call
// it before LayoutCommitIno publishes a size that writers other than this
// process (kernel clients) reached (missing.go). A size the file already
// has needs nothing. The caller holds a write layout of ino: the MDS does
// not count this call as another writer.
func (c *Client) GrowIno(ctx context.Context, ino, end uint64) error {
	var r rpc.LayoutGetResp
	if err := c.mds(ctx, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: ino, Write: true, Refresh: true}, &r); err != nil {
		return inoErr("grow", ino, "", err)
	}
	if end <= r.Attr.Size {
		return nil
	}
	v, err := newView(&r)
	if err != nil {
		return inoErr("grow", ino, "", err)
	}
	f := &File{c: c, ctx: ctx, name: fmt.Sprintf("inode %d", ino), flag: os.O_WRONLY, ino: ino, view: v, size: int64(r.Attr.Size)}
	err = f.withView(func(v *view) error {
		o := f.io(v)
		return o.settle(ctx, o.grow(ctx, int64(end), nil))
	})
	if err != nil {
		return f.err("grow", err)
	}
	return nil
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
