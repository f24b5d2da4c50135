package client

import (
	"context"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// LayoutInfo is what getstripe shows: for a file its layout, generation and
// the data server of each column; for a directory the effective policy new
// files in it inherit.
type LayoutInfo struct {
	Path   string
	Dir    bool
	Spec   string        // layout string: the file's layout or the directory's effective policy
	Layout layout.Layout // files only
	Addrs  []string      // files only: each column's data server address
	Stale  []int         // files only: components being rebuilt (not read or written)
}

// GetLayout returns the layout of a file or the effective policy of a directory.
func (c *Client) GetLayout(ctx context.Context, name string) (*LayoutInfo, error) {
	a, err := c.walk(ctx, name, true)
	if err != nil {
		return nil, pathErr("getstripe", name, err)
	}
	info := &LayoutInfo{Path: clean(name), Dir: a.IsDir()}
	if info.Dir {
		var r rpc.XattrResp
		if err := c.mds(ctx, rpc.MGetXattr, &rpc.XattrReq{Ino: a.Ino, Name: rpc.LayoutXattr}, &r); err != nil {
			return nil, pathErr("getstripe", name, err)
		}
		info.Spec = string(r.Value)
		return info, nil
	}
	if !a.IsFile() {
		return nil, pathErr("getstripe", name, rpc.Errorf(syscall.EINVAL, "not a file or directory: "+clean(name)))
	}
	var r rpc.LayoutGetResp
	if err := c.mds(ctx, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: a.Ino, Inline: true}, &r); err != nil {
		return nil, pathErr("getstripe", name, err)
	}
	v, err := newView(&r)
	if err != nil {
		return nil, pathErr("getstripe", name, err)
	}
	info.Spec, info.Layout, info.Addrs = v.lay.String(), v.lay, v.addrs
	for _, comp := range r.Stale {
		info.Stale = append(info.Stale, int(comp))
	}
	return info, nil
}

// SetLayout sets the layout policy of a directory (inherited by what is
// created in it afterwards) or the layout of an empty file. spec is a
// layout string; fields it leaves out are inherited.
func (c *Client) SetLayout(ctx context.Context, name, spec string) error {
	if _, err := layout.Parse(spec); err != nil {
		return pathErr("setstripe", name, rpc.Errorf(syscall.EINVAL, err.Error()))
	}
	a, err := c.walk(ctx, name, true)
	if err == nil {
		err = c.mds(ctx, rpc.MSetXattr, &rpc.XattrReq{Ino: a.Ino, Name: rpc.LayoutXattr, Value: []byte(spec)}, &rpc.Empty{})
	}
	return pathErr("setstripe", name, err)
}
