package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// The plus calls (rpc.MCreatePlus, ...) are the inode-level create,
// mkdir, unlink and rmdir of inode.go answered with the directory's
// attributes after the change, and a create with the open of the file
// for writing: one MDS call where a FUSE mount made two or more. An MDS
// that does not serve them (ENOSYS) is remembered, and the plain calls are
// made instead: then the directory's attributes are nil.

// plus makes the plus call method; it reports false, having done nothing,
// if the MDS does not serve it.
func (c *Client) plus(ctx context.Context, method string, req, resp any) (bool, error) {
	if c.noPlus.Load() {
		return false, nil
	}
	err := c.mds(ctx, method, req, resp)
	var re *rpc.Error
	if errors.As(err, &re) && errors.Is(err, syscall.ENOSYS) {
		c.noPlus.Store(true)
		return false, nil
	}
	return true, err
}

// MkdirInoPlus is MkdirIno that also returns the attributes of directory
// parent after the change (nil from an MDS without plus calls).
func (c *Client) MkdirInoPlus(ctx context.Context, parent uint64, name string, perm uint32, cred rpc.Cred) (attr, dir *rpc.Attr, err error) {
	var r rpc.EntryPlusResp
	req := rpc.MkdirReq{Parent: parent, Name: name, Mode: perm & 0o7777, Cred: cred}
	ok, err := c.plus(ctx, rpc.MMkdirPlus, &req, &r)
	if !ok {
		attr, err = c.MkdirIno(ctx, parent, name, perm, cred)
		return attr, nil, err
	}
	if err != nil {
		return nil, nil, inoErr("mkdir", parent, name, err)
	}
	return &r.Attr, &r.Dir, nil
}

// UnlinkInoPlus is UnlinkIno that also returns the attributes of
// directory parent after the change (nil from an MDS without plus calls).
func (c *Client) UnlinkInoPlus(ctx context.Context, parent uint64, name string) (dir *rpc.Attr, err error) {
	return c.removePlus(ctx, "unlink", rpc.MUnlinkPlus, parent, name, c.UnlinkIno)
}

// RmdirInoPlus is RmdirIno that also returns the attributes of directory
// parent after the change (nil from an MDS without plus calls).
func (c *Client) RmdirInoPlus(ctx context.Context, parent uint64, name string) (dir *rpc.Attr, err error) {
	return c.removePlus(ctx, "rmdir", rpc.MRmdirPlus, parent, name, c.RmdirIno)
}

func (c *Client) removePlus(ctx context.Context, op, method string, parent uint64, name string, plain func(context.Context, uint64, string) error) (*rpc.Attr, error) {
	var r rpc.EntryPlusResp
	ok, err := c.plus(ctx, method, &rpc.EntryReq{Parent: parent, Name: name}, &r)
	if !ok {
		return nil, plain(ctx, parent, name)
	}
	if err != nil {
		return nil, inoErr(op, parent, name, err)
	}
	return &r.Dir, nil
}

// Created is what CreateInoPlus made or found.
type Created struct {
	Attr    *rpc.Attr
	Created bool      // the call made the file
	Dir     *rpc.Attr // the directory's attributes after it; nil if the MDS did not say
	// File is the file opened for writing (with open, if the MDS could
	// open it with the create), nil otherwise: then open it with
	// OpenIno or, if Created, OpenCreatedIno.
	File *File
	// QuotaEnd is the largest size the file's quotas let it grow to
	// (^uint64(0): no limit), known if QuotaKnown (as rpc.MQuotaRoom
	// tells).
	QuotaEnd   uint64
	QuotaKnown bool
}

// CreateInoPlus is CreateIno that also returns the attributes of
// directory parent after the change and, with open, the file opened for
// reading and writing with its room to grow (one MDS call for all). The
// File does its I/O with ctx, so ctx must live as long as the File.
func (c *Client) CreateInoPlus(ctx context.Context, parent uint64, name string, perm uint32, cred rpc.Cred, excl, open bool) (*Created, error) {
	tag := c.tagFor(ctx)
	req := rpc.CreatePlusReq{
		Create: rpc.CreateReq{Parent: parent, Name: name, Mode: perm & 0o7777, Cred: cred, Exclusive: excl, Inline: true},
		Open:   open, Job: tag.Job, Class: uint8(tag.Class), Inline: true,
	}
	var r rpc.CreatePlusResp
	ok, err := c.plus(ctx, rpc.MCreatePlus, &req, &r)
	if !ok {
		a, created, err := c.CreateIno(ctx, parent, name, perm, cred, excl)
		if err != nil {
			return nil, err
		}
		return &Created{Attr: a, Created: created}, nil
	}
	if err != nil {
		return nil, inoErr("create", parent, name, err)
	}
	out := &Created{Attr: &r.Create.Attr, Created: r.Create.Created, Dir: &r.Dir}
	if r.Layout != nil {
		f := &File{c: c, ctx: ctx, name: fmt.Sprintf("inode %d", out.Attr.Ino), flag: os.O_RDWR, ino: out.Attr.Ino,
			dirty: map[int]bool{}, created: out.Created, tag: tag}
		v, err := newView(r.Layout)
		switch {
		case err == nil && r.Layout.Uncounted && v.inline == nil:
			// An uncounted grant of a file that just left the MDS: the
			// caller opens the file itself, counted.
		case err != nil:
			// The grant is returned; the caller opens the file itself.
			if !r.Layout.Uncounted {
				_ = c.mds(ctx, rpc.MLayoutReturn, &rpc.LayoutReturnReq{Ino: f.ino, Write: true}, &rpc.Empty{})
			}
		default:
			f.view, f.size, f.uncounted = v, int64(r.Layout.Attr.Size), r.Layout.Uncounted
			out.File = f
		}
	}
	if q := r.Quota; q != nil {
		out.QuotaEnd, out.QuotaKnown = ^uint64(0), true
		if q.Room != rpc.NoQuotaLimit && q.Size+q.Room >= q.Size {
			out.QuotaEnd = q.Size + q.Room
		}
	}
	return out, nil
}
