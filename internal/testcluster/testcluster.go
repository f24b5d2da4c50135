package testcluster

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// Cluster is a running test cluster; the localcluster methods (StopDS,
// RestartDS, RestartMDS, ...) control it.
type Cluster struct {
	*localcluster.Cluster
	t testing.TB
}

// Option changes the cluster's options before it starts.
type Option func(*localcluster.Options)

// WithDefaultLayout sets the cluster's default layout string.
func WithDefaultLayout(spec string) Option {
	return func(o *localcluster.Options) { o.DefaultLayout = spec }
}

// WithMDS runs n MDS replicas (raft voters) instead of one.
func WithMDS(n int) Option {
	return func(o *localcluster.Options) { o.MDS = n }
}

// WithCapacity sets each data server's capacity in bytes.
func WithCapacity(n uint64) Option {
	return func(o *localcluster.Options) { o.DSCapacity = n }
}

// WithMDSConfig changes each MDS replica's config (after the test
// defaults), e.g. the rebuild delay and rate.
func WithMDSConfig(fn func(*mds.Config)) Option {
	return func(o *localcluster.Options) { o.MDSConfig = fn }
}

// WithRecall makes every MDS replica tell r before and after it moves a
// component of a file (an nfs.Relay in front of the NFS front end).
func WithRecall(r mds.LayoutRecaller) Option {
	return func(o *localcluster.Options) { o.Recall = r }
}

// WithDSConfig changes each data server's config, e.g. scrub's.
func WithDSConfig(fn func(*ds.Config)) Option {
	return func(o *localcluster.Options) { o.DSConfig = fn }
}

// Start starts an MDS and n data servers and stops them when the test ends.
// Set STRATA_TEST_LOG=1 to see the daemons' logs.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("STRATA_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o := localcluster.Options{
		Dir:               t.TempDir(),
		DS:                n,
		AdminAddr:         "-",
		Log:               log,
		RaftTimeout:       50 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		// One second (ten beats) was short: under -race on a loaded 2-core
		// machine a data server's beats stalled for over a second and a
		// create failed ENOSPC (TestPunchHole, permtest's TestMatrix).
		HeartbeatTimeout: 3 * time.Second,
	}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, o)
	if err != nil {
		t.Fatalf("start test cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("stop test cluster: %v", err)
		}
	})
	return &Cluster{Cluster: c, t: t}
}

// Client returns a client of the cluster, closed when the test ends.
func (c *Cluster) Client() *client.Client {
	c.t.Helper()
	cfg := client.DefaultConfig()
	cfg.MDS = c.MDSAddr()
	cfg.Auth = c.Credentials()
	cl, err := client.New(cfg)
	if err != nil {
		c.t.Fatalf("client: %v", err)
	}
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Context returns a context that ends with the test (or after d).
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WithAdmin starts the admin REST API on a free loopback port, taking
// changes that carry token ("" : none).
func WithAdmin(token string) Option {
	return func(o *localcluster.Options) { o.AdminAddr, o.AdminToken = "127.0.0.1:0", token }
}

// WithTLS runs every MDS replica (RPC and raft) and data server with TLS
// from f (testcerts.Write); clients need f's CA (rpc.TLSFiles.ClientConfig).
func WithTLS(f rpc.TLSFiles) Option {
	return func(o *localcluster.Options) {
		m, d := o.MDSConfig, o.DSConfig
		o.MDSConfig = func(c *mds.Config) {
			if m != nil {
				m(c)
			}
			c.TLS = f
		}
		o.DSConfig = func(c *ds.Config) {
			if d != nil {
				d(c)
			}
			c.TLS = f
		}
	}
}

// WaitLeader returns the MDS replica that leads, waiting up to a minute
// while an election is under way (a loaded machine holds them now and
// then); the test fails if none leads by then.
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if l := c.Leader(); l >= 0 {
			return l
		}
		if time.Now().After(deadline) {
			c.t.Fatal("testcluster: no MDS leader within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
