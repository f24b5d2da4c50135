package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// DSID is the id of data server i.
func DSID(i int) string { return fmt.Sprintf("ds%d", i+1) }

// StartMDS starts the MDS (again, after StopMDS) on its directory and
// address and waits until it leads.
func (c *Cluster) StartMDS(ctx context.Context) error {
	cfg := mds.DefaultConfig()
	cfg.Listen, cfg.RaftAddr = c.o.MDSAddr, c.o.RaftAddr
	cfg.Dir = filepath.Join(c.o.Dir, "mds")
	cfg.Secret = c.secret
	if c.o.RaftTimeout != 0 {
		cfg.RaftTimeout = c.o.RaftTimeout
	}
	if c.o.HeartbeatInterval != 0 {
		cfg.HeartbeatInterval = c.o.HeartbeatInterval
	}
	if c.o.HeartbeatTimeout != 0 {
		cfg.HeartbeatTimeout = c.o.HeartbeatTimeout
	}
	if c.o.DefaultLayout != "" {
		cfg.DefaultLayout = c.o.DefaultLayout
	}
	m, err := mds.New(cfg, mds.Deps{Log: c.o.Log})
	if err != nil {
		return fmt.Errorf("mds: %w", err)
	}
	if err := m.Start(ctx); err != nil {
		_ = m.Close()
		return fmt.Errorf("mds: %w", err)
	}
	select {
	case <-m.Ready():
	case <-ctx.Done():
		_ = m.Close()
		return fmt.Errorf("mds: not ready: %w", ctx.Err())
	}
	c.mu.Lock()
	c.mds = m
	c.mu.Unlock()
	return nil
}

// StopMDS stops the MDS, as a crash would from the clients' point of view.
func (c *Cluster) StopMDS() error {
	c.mu.Lock()
	m := c.mds
	c.mds = nil
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Close()
}

// RestartMDS stops and starts the MDS on the same directory and address.
func (c *Cluster) RestartMDS(ctx context.Context) error {
	if err := c.StopMDS(); err != nil {
		return err
	}
	return c.StartMDS(ctx)
}

// StartDS starts data server i (again, after StopDS) on its directory and address.
func (c *Cluster) StartDS(ctx context.Context, i int) error {
	cfg := ds.DefaultConfig()
	cfg.ID = DSID(i)
	cfg.Listen = c.o.DSAddrs[i]
	cfg.Dir = filepath.Join(c.o.Dir, cfg.ID)
	cfg.MDS = c.o.MDSAddr
	cfg.Secret = c.secret
	cfg.Capacity = c.o.DSCapacity
	if c.o.HeartbeatInterval != 0 {
		cfg.HeartbeatInterval = c.o.HeartbeatInterval
	}
	d, err := ds.New(cfg, ds.Deps{Log: c.o.Log})
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.ID, err)
	}
	if err := d.Start(ctx); err != nil {
		_ = d.Close()
		return fmt.Errorf("%s: %w", cfg.ID, err)
	}
	c.mu.Lock()
	c.ds[i] = d
	c.mu.Unlock()
	return nil
}

// StopDS stops data server i.
func (c *Cluster) StopDS(i int) error {
	c.mu.Lock()
	d := c.ds[i]
	c.ds[i] = nil
	c.mu.Unlock()
	if d == nil {
		return nil
	}
	return d.Close()
}

// RestartDS stops and starts data server i on the same directory and address.
func (c *Cluster) RestartDS(ctx context.Context, i int) error {
	if err := c.StopDS(i); err != nil {
		return err
	}
	return c.StartDS(ctx, i)
}

// WaitDS waits until at least n data servers are up in the MDS's registry.
func (c *Cluster) WaitDS(ctx context.Context, n int) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		up := 0
		if m := c.MDS(); m != nil {
			if r, err := m.Cluster(ctx); err == nil {
				for _, d := range r.DataSvrs {
					if d.State == "up" {
						up++
					}
				}
			}
		}
		if up >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: %d of %d data servers registered: %w", up, n, ctx.Err())
		case <-t.C:
		}
	}
}

// MDS returns the running MDS, or nil while it is stopped.
func (c *Cluster) MDS() *mds.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mds
}

// DS returns data server i, or nil while it is stopped.
func (c *Cluster) DS(i int) *ds.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ds[i]
}

// NumDS returns the number of data servers, running or not.
func (c *Cluster) NumDS() int { return len(c.ds) }

// MDSAddr returns the MDS's RPC address.
func (c *Cluster) MDSAddr() string { return c.o.MDSAddr }

// AdminAddr returns the admin API's address ("-" if disabled).
func (c *Cluster) AdminAddr() string { return c.o.AdminAddr }

// DSAddr returns data server i's address.
func (c *Cluster) DSAddr(i int) string { return c.o.DSAddrs[i] }

// Dir returns the cluster's data directory.
func (c *Cluster) Dir() string { return c.o.Dir }

// Secret returns the cluster secret (tests forge and expire tokens with it).
func (c *Cluster) Secret() []byte { return c.secret }

// Close stops the admin API, the data servers and the MDS.
func (c *Cluster) Close() error {
	c.mu.Lock()
	a := c.admin
	c.admin = nil
	c.mu.Unlock()
	var errs []error
	if a != nil {
		errs = append(errs, a.Close())
	}
	for i := range c.ds {
		errs = append(errs, c.StopDS(i))
	}
	errs = append(errs, c.StopMDS())
	return errors.Join(errs...)
}

// mdsSource lets the admin API follow the MDS across restarts.
func (c *Cluster) mdsSource() source { return source{c} }

type source struct{ c *Cluster }

func (s source) Cluster(ctx context.Context) (*rpc.ClusterResp, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.Cluster(ctx)
}

func (s source) WriteMetrics(w io.Writer) error {
	m := s.c.MDS()
	if m == nil {
		return errMDSDown
	}
	return m.WriteMetrics(w)
}

var errMDSDown = errors.New("localcluster: the mds is stopped")
