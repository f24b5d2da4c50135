package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// DSID is the id of data server i.
func DSID(i int) string { return fmt.Sprintf("ds%d", i+1) }

// StartMDS starts every MDS replica (again, after StopMDS) and waits until
// a leader is elected.
func (c *Cluster) StartMDS(ctx context.Context) error {
	for i := range c.mdsAddrs {
		if err := c.startMDS(ctx, i); err != nil {
			return err
		}
	}
	return c.waitMDS(ctx, i2all(len(c.mdsAddrs)))
}

func i2all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// mdsID is the raft id of replica i.
func mdsID(i int) string { return fmt.Sprintf("mds%d", i+1) }

// StartMDSReplica starts replica i (after StopMDSReplica) without waiting.
func (c *Cluster) StartMDSReplica(ctx context.Context, i int) error { return c.startMDS(ctx, i) }

func (c *Cluster) startMDS(ctx context.Context, i int) error {
	cfg := mds.DefaultConfig()
	cfg.ID = mdsID(i)
	cfg.Listen, cfg.RaftAddr = c.mdsAddrs[i], c.raftAddrs[i]
	cfg.Dir = filepath.Join(c.o.Dir, "mds")
	if len(c.mdsAddrs) > 1 {
		cfg.Dir = filepath.Join(c.o.Dir, cfg.ID)
		for j, r := range c.raftAddrs {
			cfg.Peers = append(cfg.Peers, mdsID(j)+"="+r)
		}
	}
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
	if c.o.MDSConfig != nil {
		c.o.MDSConfig(&cfg)
	}
	m, err := mds.New(cfg, mds.Deps{Log: c.o.Log.With("mds", cfg.ID), Recall: c.o.Recall})
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.ID, err)
	}
	if err := m.Start(ctx); err != nil {
		_ = m.Close()
		return fmt.Errorf("%s: %w", cfg.ID, err)
	}
	c.mu.Lock()
	c.mds[i] = m
	c.mu.Unlock()
	return nil
}

// waitMDS waits until the given replicas are ready and one of them leads.
func (c *Cluster) waitMDS(ctx context.Context, which []int) error {
	for _, i := range which {
		m := c.MDSReplica(i)
		if m == nil {
			continue
		}
		select {
		case <-m.Ready():
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready: %w", mdsID(i), ctx.Err())
		}
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for c.Leader() < 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: no mds leader: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// StopMDSReplica stops replica i, as a crash would look to its peers and clients.
func (c *Cluster) StopMDSReplica(i int) error {
	c.mu.Lock()
	m := c.mds[i]
	c.mds[i] = nil
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Close()
}

// StopMDS stops every MDS replica.
func (c *Cluster) StopMDS() error {
	var errs []error
	for i := range c.mdsAddrs {
		errs = append(errs, c.StopMDSReplica(i))
	}
	return errors.Join(errs...)
}

// RestartMDS stops and starts every MDS replica on the same directories
// and addresses.
func (c *Cluster) RestartMDS(ctx context.Context) error {
	if err := c.StopMDS(); err != nil {
		return err
	}
	return c.StartMDS(ctx)
}

// Leader returns the index of the replica that leads now, or -1.
func (c *Cluster) Leader() int {
	for i := range c.mdsAddrs {
		m := c.MDSReplica(i)
		if m == nil {
			continue
		}
		if r, err := m.Cluster(context.Background()); err == nil && r.Role == "leader" {
			return i
		}
	}
	return -1
}

// MDSReplica returns replica i, or nil while it is stopped.
func (c *Cluster) MDSReplica(i int) *mds.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mds[i]
}

// NumMDS returns the number of MDS replicas, running or not.
func (c *Cluster) NumMDS() int { return len(c.mdsAddrs) }

// StartDS starts data server i (again, after StopDS) on its directory and address.
func (c *Cluster) StartDS(ctx context.Context, i int) error {
	cfg := ds.DefaultConfig()
	cfg.ID = DSID(i)
	cfg.Listen = c.o.DSAddrs[i]
	cfg.Dir = filepath.Join(c.o.Dir, cfg.ID)
	cfg.MDS = c.MDSAddr()
	cfg.Secret = c.secret
	cfg.Capacity = c.o.DSCapacity
	cfg.Share = c.share
	if c.o.HeartbeatInterval != 0 {
		cfg.HeartbeatInterval = c.o.HeartbeatInterval
	}
	if c.o.DSConfig != nil {
		c.o.DSConfig(&cfg)
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

// AddDS starts a new data server (the next id, a free address, a new
// directory), as an admin adds one to a running cluster, and returns its
// index.
func (c *Cluster) AddDS(ctx context.Context) (int, error) {
	addr, err := resolve("")
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	i := len(c.ds)
	c.ds = append(c.ds, nil)
	c.o.DSAddrs = append(c.o.DSAddrs, addr)
	c.mu.Unlock()
	return i, c.StartDS(ctx, i)
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

// MDS returns the leading MDS replica, else any running one, else nil.
func (c *Cluster) MDS() *mds.Server {
	if i := c.Leader(); i >= 0 {
		return c.MDSReplica(i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.mds {
		if m != nil {
			return m
		}
	}
	return nil
}

// DS returns data server i, or nil while it is stopped.
func (c *Cluster) DS(i int) *ds.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ds[i]
}

// NumDS returns the number of data servers, running or not.
func (c *Cluster) NumDS() int { return len(c.ds) }

// MDSAddr returns the MDS's RPC address; with several replicas, all of
// them, comma-separated (clients and data servers take such a list).
func (c *Cluster) MDSAddr() string { return strings.Join(c.mdsAddrs, ",") }

// RaftAddrs returns each replica's raft address.
func (c *Cluster) RaftAddrs() []string { return slices.Clone(c.raftAddrs) }

// MDSReplicaAddr returns replica i's RPC address.
func (c *Cluster) MDSReplicaAddr(i int) string { return c.mdsAddrs[i] }

// AdminAddr returns the admin API's address ("-" if disabled).
func (c *Cluster) AdminAddr() string { return c.o.AdminAddr }

// DSAddr returns data server i's address.
func (c *Cluster) DSAddr(i int) string { return c.o.DSAddrs[i] }

// Dir returns the cluster's data directory.
func (c *Cluster) Dir() string { return c.o.Dir }

// Secret returns the cluster secret (tests forge and expire tokens with it).
func (c *Cluster) Secret() []byte { return c.secret }

// Credentials returns the credentials of a node daemon of this cluster
// (root on a trusted node; it acts for each call's identity.Actor, else
// for its client's Cred): what a client of the cluster in this process
// authenticates with.
func (c *Cluster) Credentials() identity.Credentials {
	return identity.NewNodeCredentials(c.secret, identity.RoleNode, "localcluster", "")
}

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

func (s source) Tiers(ctx context.Context) ([]rpc.TierRecord, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.Tiers(ctx)
}

func (s source) Tier(ctx context.Context, job uint32) (*rpc.TierRecord, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.Tier(ctx, job)
}

func (s source) QoSPolicy(ctx context.Context) (*rpc.QoSPolicyResp, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.QoSPolicy(ctx)
}

func (s source) SetQoSPolicy(ctx context.Context, doc []byte) (*rpc.QoSPolicyResp, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.SetQoSPolicy(ctx, doc)
}

func (s source) QoSStatus(ctx context.Context) (*rpc.QoSStatusResp, error) {
	m := s.c.MDS()
	if m == nil {
		return nil, errMDSDown
	}
	return m.QoSStatus(ctx)
}

var errMDSDown = errors.New("localcluster: the mds is stopped")
