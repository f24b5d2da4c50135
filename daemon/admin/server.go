package admin

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/logging"
)

// Source is what the admin API reports on: the MDS, or a fake in tests.
type Source interface {
	// Cluster returns the MDS's role and its data server registry.
	Cluster(ctx context.Context) (*rpc.ClusterResp, error)
	// WriteMetrics writes metrics in the Prometheus text format.
	WriteMetrics(w io.Writer) error
}

// TierSource is the job tier registry (daemon/mds tiers.go), for
// GET /v1/tiers and /v1/tiers/{job}.
type TierSource interface {
	// Tiers returns every tier record, by job id.
	Tiers(ctx context.Context) ([]rpc.TierRecord, error)
	// Tier returns one job's record; an error matching syscall.ENOENT when
	// there is none.
	Tier(ctx context.Context, job uint32) (*rpc.TierRecord, error)
}

// Actions are the admin API's mutations (the MDS, or a fake in tests).
type Actions interface {
	// StartScrub has every data server verify every block now.
	StartScrub(ctx context.Context) error
	// Drain drains data server id, or with cancel stops draining it.
	Drain(ctx context.Context, id string, cancel bool) error
}

// Deps are the admin server's collaborators.
type Deps struct {
	Log     *slog.Logger // default: discard
	Source  Source       // required
	Tiers   TierSource   // optional: without it /v1/tiers answers 404
	QoS     QoSSource    // optional: without it /v1/qos answers 404
	Actions Actions      // optional: without it the mutations answer 404
}

const (
	// requestTimeout bounds each request's calls to the Source.
	requestTimeout = 10 * time.Second
	// shutdownTimeout bounds how long Close waits for connections.
	shutdownTimeout = 15 * time.Second
)

// Server serves the admin API. Start it once; Close stops it and waits for
// its goroutine.
type Server struct {
	cfg    Config
	log    *slog.Logger
	src    Source
	tiers  TierSource
	qos    QoSSource
	acts   Actions
	token  []byte      // SHA-256 of the admin token; nil: none
	tls    *tls.Config // nil: plain HTTP
	munge  identity.Munge
	routes map[string]route
	srv    *fasthttp.Server

	ready chan struct{}

	// base is the parent of every request's context; Close cancels it.
	base   context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // guards ln, started, closed
	ln      net.Listener
	started bool
	closed  bool
	done    chan struct{} // closed when the serve goroutine returns
}

// New returns a server for cfg; it does not listen until Start.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Source == nil {
		return nil, errors.New("admin: no source")
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var token []byte
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		token = sum[:]
	}
	if cfg.TokenFile != "" {
		t, err := tokenOf(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		token = t
	}
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("admin: TLS: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s := &Server{
		tls:   tlsCfg,
		cfg:   cfg,
		log:   log.With("component", "admin"),
		src:   deps.Source,
		tiers: deps.Tiers,
		qos:   deps.QoS,
		acts:  deps.Actions,
		token: token,
		munge: identity.Munge{Socket: cfg.MungeSocket},
		ready: make(chan struct{}),
		done:  make(chan struct{}),
	}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.routes = s.routeTable()
	s.srv = &fasthttp.Server{
		Handler:               s.serve,
		Name:                  "strata-admin",
		NoDefaultServerHeader: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           2 * time.Minute,
		MaxRequestBodySize:    1 << 20,
		MaxConnsPerIP:         256,
		Concurrency:           4096,
		CloseOnShutdown:       true,
		// fasthttp's own lines (connection errors, warnings) go through
		// the daemon's logger: structured, and rate-limited when repeated.
		Logger: logging.Printf(log, slog.LevelWarn, "fasthttp"),
	}
	return s, nil
}

// Start listens on the configured address and serves in a goroutine that
// Close waits for. ctx bounds only the start itself: requests get their
// own contexts, cancelled by Close.
func (s *Server) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("admin: already started or closed")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("admin: listen: %w", err)
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln, s.started = ln, true
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Error("serve failed", "err", err)
		}
	}()
	s.log.Info("admin api listening", "addr", ln.Addr().String())
	close(s.ready)
	return nil
}

// Ready is closed once the server accepts connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address the server listens on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops accepting, cancels requests in flight, waits for them and the
// serve goroutine. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	s.cancel()
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.srv.ShutdownWithContext(ctx)
	// Shutdown only closes listeners Serve has registered; close ours in
	// case the serve goroutine has not got that far yet.
	_ = s.ln.Close()
	<-s.done
	if err != nil {
		return fmt.Errorf("admin: shutdown: %w", err)
	}
	return nil
}
