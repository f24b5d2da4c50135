package client

import (
	"context"

	"github.com/strata-hpc/strata/qos"
)

type tagKey struct{}

// WithTag returns a context whose files are opened with QoS tag t: the
// capabilities the MDS grants them carry it, and every data server
// schedules their requests by it. The FUSE mount sets each caller's
// Slurm job this way; without it a file takes Config.Tag.
func WithTag(ctx context.Context, t qos.Tag) context.Context {
	return context.WithValue(ctx, tagKey{}, t)
}

// tagFor returns the tag of a file opened with ctx.
func (c *Client) tagFor(ctx context.Context) qos.Tag {
	if t, ok := ctx.Value(tagKey{}).(qos.Tag); ok {
		return t
	}
	return c.cfg.Tag
}
