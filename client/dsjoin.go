package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// joinStartGrace is how long JoinDS waits for a data server to answer.
const joinStartGrace = 5 * time.Second

// JoinDS waits until the data server answering at addr (already started,
// with this namespace's MDS and secret) is registered and up, and returns
// its entry. Data servers register themselves by heartbeat; this is the
// admin's check that a new one has joined.
func (c *Client) JoinDS(ctx context.Context, addr string) (*rpc.DSInfo, error) {
	var info rpc.DSInfoResp
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	// One that is still starting (its listener not up yet) gets a few
	// seconds: an admin may start it and add it in one breath.
	until := time.Now().Add(joinStartGrace)
	for {
		err := c.rpc.Call(ctx, addr, rpc.DInfo, &rpc.Empty{}, &info)
		if err == nil {
			break
		}
		if !errors.Is(err, rpc.ErrUnavailable) || time.Now().After(until) || ctx.Err() != nil {
			return nil, fmt.Errorf("no data server answers at %s (start it first: strata ds --id ID --mds ... --listen %s): %w", addr, addr, err)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	for {
		cl, err := c.Cluster(ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range cl.DataSvrs {
			if d.ID == info.ID && d.State == "up" {
				return &d, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("data server %s answers at %s but has not registered with this MDS (check its --mds and --secret-file): %w", info.ID, addr, ctx.Err())
		case <-t.C:
		}
	}
}
