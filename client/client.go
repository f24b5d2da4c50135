package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/qos"
)

// DefaultMDS is the address every client command targets unless told
// otherwise: where `strata dev` listens.
const DefaultMDS = "127.0.0.1:7000"

// Config configures a Client.
type Config struct {
	MDS     string        // MDS address, or a comma-separated list of the replicas; default DefaultMDS
	Timeout time.Duration // per RPC when the context has none; default 30s
	// Cred owns what this client creates; default the process's uid and
	// gid. Calls act for the process itself (its permissions are checked),
	// except where a context says otherwise (rpc.WithCred, as the FUSE
	// mount does for each caller): a root process (the agent) may create
	// files a user owns, as it may chown them.
	Cred        rpc.Cred
	MaxInflight int // data requests in flight per file call; default 16
	// ChunkSize is the most bytes of one data server request; default
	// 1 MiB. A request's bytes are summed, sent, received, verified and
	// written while still in the CPU caches: with 4 MiB the data servers'
	// pwrite alone cost twice the CPU per byte (BenchmarkDataPath). A
	// striped read asks for up to four chunks of a column at once
	// (readChunks), verified as they land.
	ChunkSize int
	// FailoverTimeout is how long a call keeps trying other MDS replicas
	// while none leads (an election); default 15s.
	FailoverTimeout time.Duration
	// Tag is the QoS tag of files opened without one (WithTag): the job
	// this client serves and its class; default no job, class io.
	Tag qos.Tag
	// Auth proves who is calling: a node daemon's credentials (it acts for
	// Cred, or for the actor of each call's context, identity.WithActor).
	// Munge, if Auth is nil, is the munged a user's process proves its uid
	// to: the client opens a session with it. With neither, calls carry no
	// credential and an MDS that authenticates refuses them. See
	// docs/security.md.
	Auth  identity.Credentials
	Munge *identity.Munge
	// TLS, if set, is the TLS every call to the MDS and the data servers
	// speaks (rpc.TLSFiles.ClientConfig); nil: plain HTTP.
	TLS *tls.Config
}

// DefaultConfig returns the defaults: the dev MDS, this process's identity.
func DefaultConfig() Config {
	return Config{
		MDS:             DefaultMDS,
		Timeout:         30 * time.Second,
		Cred:            rpc.Cred{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())},
		MaxInflight:     16,
		ChunkSize:       1 << 20,
		FailoverTimeout: 15 * time.Second,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if len(newMDSSet(c.MDS).addrs) == 0 {
		return errors.New("client: no MDS address")
	}
	if c.MaxInflight < 1 || c.ChunkSize < 4096 || c.ChunkSize > rpc.MaxData {
		return fmt.Errorf("client: MaxInflight %d or ChunkSize %d out of range", c.MaxInflight, c.ChunkSize)
	}
	return nil
}

// Client talks to one Strata namespace. It is safe for concurrent use.
type Client struct {
	cfg    Config
	self   rpc.Cred // the process's own uid and gid: who its calls act for
	rpc    *rpc.Client
	sess   *session
	mdsSet *mdsSet

	creates  *rpc.Coalescer[rpc.CreateReq, rpc.CreateManyItem] // createmany.go
	noMany   atomic.Bool                                       // the MDS does not know MCreateMany
	getattrs *rpc.Coalescer[uint64, rpc.AttrItem]              // getattrmany.go
	noAttrs  atomic.Bool                                       // the MDS does not know MGetattrMany
	noPlus   atomic.Bool                                       // the MDS does not serve the plus calls (plus.go)
}

// New returns a Client. It does not contact the MDS; the first call does.
func New(cfg Config) (*Client, error) {
	def := DefaultConfig()
	if cfg.MDS == "" {
		cfg.MDS = def.MDS
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = def.Timeout
	}
	if cfg.MaxInflight == 0 {
		cfg.MaxInflight = def.MaxInflight
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = def.ChunkSize
	}
	if cfg.FailoverTimeout == 0 {
		cfg.FailoverTimeout = def.FailoverTimeout
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:    cfg,
		self:   rpc.Cred{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())},
		sess:   newSession(),
		mdsSet: newMDSSet(cfg.MDS),
	}
	if c.cfg.Auth == nil && c.cfg.Munge != nil {
		c.cfg.Auth = identity.NewSessionCredentials(*c.cfg.Munge, c.openSession)
	}
	rc := rpc.ClientConfig{Timeout: cfg.Timeout, MaxConnsPerHost: 4 * cfg.MaxInflight, TLS: cfg.TLS}
	if c.cfg.Auth != nil {
		rc.Auth = c.header
	}
	c.rpc = rpc.NewClient(rc)
	c.creates = rpc.NewCoalescer(rpc.MaxCreateMany, createsInflight, c.createBatch)
	c.getattrs = rpc.NewCoalescer(rpc.MaxGetattrMany, getattrsInflight, c.getattrBatch)
	return c, nil
}

// header is the Authorization header of a call made in ctx: a node
// daemon's calls act for the Cred of ctx (rpc.WithCred: the FUSE mount's
// caller), else for the process itself.
func (c *Client) header(ctx context.Context) (string, error) {
	if _, ok := identity.ActorFrom(ctx); !ok {
		cr, ok := rpc.CredFrom(ctx)
		if !ok {
			cr = c.self
		}
		ctx = identity.WithActor(ctx, identity.Actor{Uid: cr.Uid, Gid: cr.Gid})
	}
	return c.cfg.Auth.Header(ctx)
}

// openSession opens a session at the MDS with a MUNGE credential.
func (c *Client) openSession(ctx context.Context, mungeHeader string) ([]byte, time.Time, error) {
	var r rpc.AuthSessionResp
	if err := c.mds(rpc.WithAuthorization(ctx, mungeHeader), rpc.MAuthSession, &rpc.Empty{}, &r); err != nil {
		return nil, time.Time{}, err
	}
	return r.Token, time.Unix(0, r.Expiry), nil
}

// Close stops renewing the lock session (its locks lapse with the lease)
// and releases idle connections.
func (c *Client) Close() error {
	c.sess.close()
	c.creates.Close()
	c.getattrs.Close()
	c.rpc.Close()
	return nil
}

// Cluster returns the MDS's view of the cluster.
func (c *Client) Cluster(ctx context.Context) (*rpc.ClusterResp, error) {
	var r rpc.ClusterResp
	if err := c.mds(ctx, rpc.MCluster, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &r, nil
}

// StatFS returns the namespace's capacity, free space and inode count.
func (c *Client) StatFS(ctx context.Context) (*rpc.StatFSResp, error) {
	var r rpc.StatFSResp
	if err := c.mds(ctx, rpc.MStatFS, &rpc.Empty{}, &r); err != nil {
		return nil, fmt.Errorf("statfs: %w", err)
	}
	return &r, nil
}
