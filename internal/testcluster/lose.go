package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// DSIndex returns the index of the data server with id, or -1.
func (c *Cluster) DSIndex(id string) int {
	for i := range c.NumDS() {
		if localcluster.DSID(i) == id {
			return i
		}
	}
	return -1
}

// LoseComponent removes component comp from data server dsID behind the
// MDS's back, as a lost disk file or an admin's rm would: the server is
// stopped (so that it holds no open file of it), the component's data
// and checksum files are removed, and the server is started again and
// waited for.
func (c *Cluster) LoseComponent(ctx context.Context, dsID string, comp rpc.ComponentID) error {
	i := c.DSIndex(dsID)
	if i < 0 {
		return fmt.Errorf("no data server %q", dsID)
	}
	path := c.DS(i).ComponentPath(comp)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("component to lose: %w", err)
	}
	if err := c.StopDS(i); err != nil {
		return err
	}
	for _, p := range []string{path, path + ".crc"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := c.StartDS(ctx, i); err != nil {
		return err
	}
	return c.WaitDS(ctx, c.NumDS())
}
