package mds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// applyTimeout bounds how long a change waits to enter raft's queue.
const applyTimeout = 10 * time.Second

// Deps are the server's injectable dependencies.
type Deps struct {
	Log   *slog.Logger     // nil: discard
	Clock func() time.Time // nil: time.Now
	// Recall is told before the MDS moves a component of a file and after
	// it swapped one in (recall.go); nil: nobody is told.
	Recall LayoutRecaller
}

// Server is a metadata server. Create it with New, then Start; Close stops
// it. Its methods are safe for concurrent use.
type Server struct {
	cfg       Config
	log       *slog.Logger
	clock     func() time.Time
	recall    LayoutRecaller // may be nil
	def       layout.Policy  // the cluster default, complete
	fsm       *fsm
	reg       *registry
	ledger    *ledger // the bandwidth ledger (ledger.go)
	leases    *leases
	met       *metrics
	rmet      *repairMetrics
	wr        *writers       // files granted for writing (stale.go)
	horizonMu sync.Mutex     // one raise of the write-grant horizon at a time
	regMu     sync.Mutex     // one data server registration at a time (handlers.go)
	rb        *rebuilder     // the rebuild manager (rebuild.go)
	groups    *groupCache    // callers' supplementary groups (caller.go)
	dsc       *rpc.Client    // calls to data servers (GC)
	spillMu   sync.Mutex     // one spill of an inline file at a time (inline.go)
	spillCMu  sync.Mutex     // guards spillC
	spillC    *client.Client // writes spilled inline files; nil until the first
	auth      *authState     // who is asking (auth.go)
	tls       tlsConfigs     // Config.TLS loaded; zero: plain (tls.go)
	ready     chan struct{}
	office    atomic.Uint64 // the raft term this node last took office in (ha.go)

	mu        sync.Mutex // guards the lifecycle fields below
	started   bool
	closed    bool
	startedAt time.Time
	node      *raftNode
	prop      *proposer
	ln        net.Listener
	srv       *rpc.Server
	cancel    context.CancelFunc
	wg        sync.WaitGroup // serve loop, leader watch, GC loop, rebuild manager, proposer
}

// New checks cfg and returns a Server that is not started yet.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def, err := defaultPolicy(cfg.DefaultLayout)
	if err != nil {
		return nil, fmt.Errorf("%w: default layout: %w", ErrConfig, err)
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	cfg.Secret = slices.Clone(cfg.Secret)
	auth, err := newAuthState(cfg)
	if err != nil {
		return nil, err
	}
	tlsc, err := loadTLS(cfg.TLS)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		log:    deps.Log.With("component", "mds", "mds_id", cfg.ID),
		clock:  deps.Clock,
		recall: deps.Recall,
		groups: newGroupCache(deps.Clock),
		def:    def,
		fsm:    newFSM(),
		reg:    newRegistry(cfg.HeartbeatTimeout, deps.Clock, rand.Uint64()),
		ledger: newLedger(),
		leases: newLeases(cfg.HeartbeatTimeout, deps.Clock),
		met:    &metrics{},
		rmet:   &repairMetrics{},
		wr:     newWriters(deps.Clock),
		dsc:    rpc.NewClient(rpc.ClientConfig{Timeout: gcCallTimeout, MaxConnsPerHost: gcParallel, TLS: tlsc.client}),
		ready:  make(chan struct{}),
		auth:   auth,
		tls:    tlsc,
	}
	s.rb = newRebuilder(s)
	return s, nil
}

// Start opens raft (bootstrapping a single voter once, when Dir has no
// raft state), listens on Config.Listen and serves. It returns once the
// server is listening; Ready tells when it can take changes.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return fmt.Errorf("mds: start: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mds: start: %w", err)
	}
	peers, err := parsePeers(s.cfg.Peers)
	if err != nil {
		return fmt.Errorf("mds: start: %w", err)
	}
	node, err := openRaft(raftOptions{
		ID:                s.cfg.ID,
		Addr:              s.cfg.RaftAddr,
		Dir:               s.cfg.Dir,
		Timeout:           s.cfg.RaftTimeout,
		SnapshotThreshold: s.cfg.SnapshotThreshold,
		Log:               newHclog(s.log, "raft"),
		Peers:             peers,
		Join:              s.cfg.Join,
		Secret:            s.cfg.Secret,
		TLS:               s.tls.raft,
		TLSDial:           s.tls.client,
	}, s.fsm)
	if err != nil {
		return fmt.Errorf("mds: start: %w", err)
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return errors.Join(fmt.Errorf("mds: listen on %s: %w", s.cfg.Listen, err), node.close())
	}
	s.node, s.ln, s.started, s.startedAt = node, ln, true, s.clock()
	s.prop = newProposer(node.raft)
	mux := rpc.NewMux()
	s.register(mux)
	s.srv, err = rpc.NewServer(mux, s.log, s.cfg.RPC)
	if err != nil {
		return errors.Join(fmt.Errorf("mds: start: %w", err), ln.Close(), node.close())
	}
	s.srv.Authenticate(s.authenticate)
	if s.tls.server != nil {
		s.srv.UseTLS(s.tls.server)
	}
	bg, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(4)
	go s.serve(ln)
	go s.watchLeader(bg)
	go s.runGC(bg)
	go s.runRebuild(bg)
	s.log.Info("mds_started", "rpc_addr", ln.Addr().String(), "raft_addr", string(node.trans.LocalAddr()), "dir", s.cfg.Dir)
	return nil
}

func (s *Server) serve(ln net.Listener) {
	defer s.wg.Done()
	if err := s.srv.Serve(ln); err != nil {
		s.log.Error("rpc_serve_failed", "err", err)
	}
}

// Ready is closed once this node is the leader and has applied its log.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address the RPC server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// raft returns the raft instance, nil before Start.
func (s *Server) raft() *raft.Raft {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node == nil {
		return nil
	}
	return s.node.raft
}

// Close stops serving (calls in flight finish), stops the GC loop, shuts
// raft down and closes its stores, and waits for every goroutine. Calling
// it again does nothing.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.started || s.closed {
		s.closed = true
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	var errs []error
	if err := s.srv.Shutdown(); err != nil {
		errs = append(errs, fmt.Errorf("mds: stop rpc server: %w", err))
	}
	s.cancel()
	if err := s.node.close(); err != nil {
		errs = append(errs, fmt.Errorf("mds: %w", err))
	}
	s.wg.Wait()
	s.dsc.Close()
	s.spillCMu.Lock()
	if s.spillC != nil {
		_ = s.spillC.Close() // idle connections only
	}
	s.spillCMu.Unlock()
	s.log.Info("mds_stopped")
	return errors.Join(errs...)
}

// Cluster describes this node for the admin API: its raft role, term,
// leader and applied index, the data servers with their state, the inode
// count and the default layout.
func (s *Server) Cluster(ctx context.Context) (*rpc.ClusterResp, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := s.raft()
	if r == nil {
		return nil, fmt.Errorf("mds: cluster: %w", ErrClosed)
	}
	_, leader := r.LeaderWithID()
	resp := &rpc.ClusterResp{
		ID:        s.cfg.ID,
		Role:      roleOf(r.State()),
		Term:      r.CurrentTerm(),
		Leader:    string(leader),
		Applied:   r.AppliedIndex(),
		Default:   s.def.String(),
		StartedAt: s.startTime().UnixNano(),
	}
	if vs, err := s.voters(); err == nil {
		resp.Voters = vs
	}
	s.fsm.mu.RLock()
	recs := make([]dsRecord, 0, len(s.fsm.st.ds))
	for _, d := range s.fsm.st.ds {
		recs = append(recs, d)
	}
	resp.Inodes = uint64(len(s.fsm.st.inodes))
	resp.LeaderRPC = s.fsm.st.mds[string(leader)]
	s.fsm.mu.RUnlock()
	slices.SortFunc(recs, func(a, b dsRecord) int { return strings.Compare(a.ID, b.ID) })
	now := s.clock()
	for _, d := range recs {
		resp.DataSvrs = append(resp.DataSvrs, s.reg.info(d, now))
	}
	return resp, nil
}

func (s *Server) startTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startedAt
}
