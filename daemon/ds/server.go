package ds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/qos"
)

// Deps are the data server's collaborators; nil fields take defaults.
type Deps struct {
	Log   *slog.Logger     // nil = discard
	Clock func() time.Time // nil = time.Now; checks token expiry and measures load
	Disk  Disk             // nil = OSDisk
	Meter Meter            // nil = SystemMeter: disk and network counters for the bandwidth ledger
}

// Server is a data server. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	secret []byte
	log    *slog.Logger
	clock  func() time.Time
	disk   Disk
	meter  Meter
	store  *store
	rpc    *rpc.Server
	hb     *rpc.Client
	peers  *rpc.Client        // reads of other data servers' components for rebuilds (rebuild.go)
	auth   *identity.Verifier // the callers' credentials, which capabilities are bound to
	scrub  *scrubber
	qos    *qos.Scheduler // shares the server between classes and jobs (qos.go)
	ready  chan struct{}

	busy atomic.Int64 // nanoseconds spent in component calls, for Load

	mu      sync.Mutex
	started bool
	closed  bool
	ln      net.Listener
	addr    string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New validates cfg, opens (or creates) the component store in cfg.Dir
// and returns a Server that is not yet listening.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Disk == nil {
		deps.Disk = OSDisk{}
	}
	if deps.Meter == nil {
		deps.Meter = NewSystemMeter()
	}
	log := deps.Log.With("component", "ds", "ds_id", cfg.ID)
	st, err := openStore(cfg.Dir, deps.Disk, log, cfg.ID, cfg.BlockSize, cfg.Capacity)
	if err != nil {
		return nil, fmt.Errorf("ds %s: %w", cfg.ID, err)
	}
	clock := deps.Clock
	st.now = func() int64 { return clock().UnixNano() }
	s := &Server{
		cfg:    cfg,
		secret: append([]byte(nil), cfg.Secret...),
		log:    log,
		clock:  deps.Clock,
		disk:   deps.Disk,
		meter:  deps.Meter,
		store:  st,
		ready:  make(chan struct{}),
	}
	s.scrub = newScrubber(s)
	s.qos = qos.NewScheduler(qos.SchedulerConfig{
		Capacity: cfg.QoSBandwidth, MaxInflight: cfg.QoSMaxInflight, MaxQueued: cfg.QoSMaxQueued, Clock: deps.Clock,
	})
	mux := rpc.NewMux()
	s.register(mux)
	s.rpc, err = rpc.NewServer(mux, log, cfg.RPC)
	if err != nil {
		st.close()
		return nil, fmt.Errorf("ds %s: %w", cfg.ID, err)
	}
	s.rpc.StreamBodies() // writes carry MiBs

	// TLS of the listener, and of the heartbeats and the calls to other
	// data servers (rebuild, drain, repair).
	var clientTLS *tls.Config
	if cfg.TLS.On() {
		srvTLS, err := cfg.TLS.ServerConfig()
		if err == nil {
			clientTLS, err = cfg.TLS.ClientConfig()
		}
		if err != nil {
			st.close()
			return nil, fmt.Errorf("ds %s: %w", cfg.ID, err)
		}
		s.rpc.UseTLS(srvTLS)
	}
	s.auth = identity.NewVerifier(identity.VerifierConfig{Secret: cfg.Secret, Groups: noGroups{}, AdminGroup: -1, Clock: deps.Clock})
	s.rpc.Authenticate(s.authenticate)
	timeout := min(max(cfg.HeartbeatInterval, time.Second), 10*time.Second)
	creds := identity.NewNodeCredentials(cfg.Secret, identity.RoleDS, cfg.Node, cfg.ID).WithClock(deps.Clock)
	s.hb = rpc.NewClient(rpc.ClientConfig{Timeout: timeout, MaxConnsPerHost: 2, Auth: creds.Header, TLS: clientTLS})
	s.peers = rpc.NewClient(rpc.ClientConfig{Timeout: peerCallTimeout, MaxConnsPerHost: 16, Auth: creds.Header, TLS: clientTLS})
	return s, nil
}

// Start listens on cfg.Listen, serves the DS protocol and starts the
// heartbeat loop, whose first heartbeat goes out at once. It returns once
// the listener is open. ctx bounds only the start; Close stops the server.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("ds: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("ds %s: %w", s.cfg.ID, err)
	}
	s.started = true
	s.ln = ln
	s.addr = ln.Addr().String()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Go(func() {
		if err := s.rpc.Serve(ln); err != nil {
			s.log.Error("serve failed", "err", err)
		}
	})
	advertise := s.cfg.Advertise
	if advertise == "" {
		advertise = s.addr
	}
	if s.cfg.MDS != "" {
		s.wg.Go(func() { s.heartbeatLoop(runCtx, advertise) })
	}
	s.wg.Go(func() { s.scrub.loop(runCtx) })
	close(s.ready)
	used, capacity := s.store.usage()
	s.log.Info("data server started", "addr", s.addr, "advertise", advertise,
		"dir", s.cfg.Dir, "capacity", capacity, "used", used, "block_size", s.cfg.BlockSize)
	return nil
}

// Ready is closed once the server is serving.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address the server listens on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// ComponentPath returns the path of the data file of component id. Its
// checksums are in the same path plus ".crc".
func (s *Server) ComponentPath(id rpc.ComponentID) string { return s.store.path(id) }

// Close stops serving (waiting for calls in flight), stops heartbeats,
// waits for every goroutine and closes the store. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()

	s.qos.Close() // queued calls end now: Shutdown waits for the calls in flight
	var err error
	if started {
		s.cancel()
		err = s.rpc.Shutdown()
		// Shutdown misses a listener that Serve has not registered yet.
		if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
			err = cerr
		}
	}
	s.wg.Wait()
	s.hb.Close()
	s.peers.Close()
	s.store.close()
	if err != nil {
		return fmt.Errorf("ds %s: close: %w", s.cfg.ID, err)
	}
	s.log.Info("data server stopped")
	return nil
}

// free returns the bytes that can still be stored: the capacity left, or
// less if the file system holding Dir is fuller. A server sharing its file
// system (Config.Share) counts its share of the available bytes only, and
// reports as capacity its own use plus that free space.
func (s *Server) free() (capacity, free uint64) {
	used, capacity := s.store.usage()
	if used < capacity {
		free = capacity - used
	}
	if _, avail, err := s.disk.Statfs(s.cfg.Dir); err == nil {
		if s.cfg.Share > 1 {
			avail /= uint64(s.cfg.Share)
		}
		free = min(free, avail)
	}
	if s.cfg.Share > 1 {
		capacity = min(capacity, used+free)
	}
	return capacity, free
}
