package client

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// createsInflight is how many MCreateMany calls one identity may have
// out at once: creates made meanwhile queue and go in the next call.
const createsInflight = 4

// create sends one create to the MDS. Creates made at the same time by
// the same identity (threads of a program, processes behind a mount) are
// coalesced into MCreateMany calls (rpc.Coalescer): under load one round
// trip and one raft group commit carry many of them; alone, a create goes
// out at once. Each is checked and answered as its own MCreate.
func (c *Client) create(ctx context.Context, req *rpc.CreateReq) (*rpc.CreateResp, error) {
	if c.noMany.Load() {
		return c.createOne(ctx, req)
	}
	it, err := c.creates.Do(ctx, c.identityKey(ctx), *req)
	if errors.Is(err, rpc.ErrCoalescerClosed) {
		return c.createOne(ctx, req) // a call after Close, sent as before
	}
	if err != nil {
		return nil, err
	}
	return it.Result()
}

// createOne sends one create as an MCreate call of its own.
func (c *Client) createOne(ctx context.Context, req *rpc.CreateReq) (*rpc.CreateResp, error) {
	var r rpc.CreateResp
	if err := c.mds(ctx, rpc.MCreate, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// identityKey names what a call made in ctx is made as besides its
// request: the Authorization header ctx carries, the user a node daemon
// acts for and the Cred of the call. Creates of one key may share a call.
func (c *Client) identityKey(ctx context.Context) string {
	auth, _ := rpc.AuthorizationFrom(ctx)
	actor, hasActor := identity.ActorFrom(ctx)
	cred, hasCred := rpc.CredFrom(ctx)
	return fmt.Sprintf("%q %v %v %v %v", auth, hasActor, actor, hasCred, cred)
}

// createBatch is the Coalescer's batch call: one MCreateMany, or, from an
// MDS that does not know it (an older version), one MCreate per item.
func (c *Client) createBatch(ctx context.Context, items []rpc.CreateReq) ([]rpc.CreateManyItem, error) {
	if !c.noMany.Load() {
		var r rpc.CreateManyResp
		err := c.mds(ctx, rpc.MCreateMany, &rpc.CreateManyReq{Items: items}, &r)
		if err == nil {
			return r.Items, nil
		}
		if !unknownCall(err) {
			return nil, err
		}
		c.noMany.Store(true)
	}
	out := make([]rpc.CreateManyItem, len(items))
	for i := range items {
		r, err := c.createOne(ctx, &items[i])
		out[i] = rpc.CreateManyResult(r, err)
	}
	return out, nil
}

// unknownCall reports whether err is an MDS's answer to a call it does
// not know (an older version): ENOSYS.
func unknownCall(err error) bool {
	var re *rpc.Error
	return errors.As(err, &re) && re.Errno == uint32(syscall.ENOSYS)
}
