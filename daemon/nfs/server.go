package nfs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Deps are the front end's collaborators.
type Deps struct {
	Log *slog.Logger
	// Client reaches the namespace and the data servers. The front end
	// does not close it.
	Client *client.Client
}

// Server is a running NFSv4.1 front end.
type Server struct {
	cfg Config
	log *slog.Logger
	cl  *client.Client
	fh  fhCodec

	boot     uint32  // stateid and verifier epoch
	verifier [8]byte // write verifier: changes when the server restarts

	lis   *oncrpc.Listener
	ready chan struct{}
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	rc     recallState
	st     *state
	files  *fileTable
	cookie *cookieTable

	devMu   sync.Mutex
	devices map[[16]byte]string // device id -> NFSv3 data server address
}

// New returns a Server; Start serves.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Client == nil {
		return nil, fmt.Errorf("%w: no client", ErrConfig)
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		log:     log.With("component", "nfs"),
		cl:      deps.Client,
		fh:      fhCodec{key: cfg.HandleKey},
		ready:   make(chan struct{}),
		cookie:  newCookieTable(1 << 16),
		devices: map[[16]byte]string{},
	}
	_, _ = rand.Read(s.verifier[:])
	s.boot = binary.BigEndian.Uint32(s.verifier[:4]) | 1
	s.rc.active, s.rc.epochs = map[uint64]bool{}, map[uint64]uint32{}
	s.rc.base = binary.BigEndian.Uint32(s.verifier[4:]) & 0xffff << 4
	s.st = newState(s)
	s.files = newFileTable(s)
	return s, nil
}

// Start listens and serves until Close.
func (s *Server) Start(ctx context.Context) error {
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	cfg := oncrpc.ConnConfig{MaxRecord: s.cfg.MaxRecord, MaxInflight: s.cfg.Slots + 4, VersLow: nfsVers4, VersHigh: nfsVers4}
	l, err := oncrpc.Listen(s.ctx, s.cfg.Addr, cfg, s, func(c *oncrpc.Conn, err error) {
		if err != nil {
			s.log.Debug("nfs_conn_closed", "peer", c.RemoteAddr().String(), "err", err)
		}
		s.st.connGone(c)
	})
	if err != nil {
		s.stop()
		return fmt.Errorf("nfs: %w", err)
	}
	s.lis = l
	s.rc.mu.Lock()
	s.rc.started = true
	s.rc.mu.Unlock()
	s.wg.Add(1)
	go s.reap()
	close(s.ready)
	s.log.Info("nfs_serving", "addr", l.Addr().String())
	return nil
}

// Ready is closed once the server listens.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops serving, closes every connection and every open file (its
// bytes are synced first).
func (s *Server) Close() error {
	if s.lis == nil {
		return nil
	}
	s.rc.mu.Lock()
	s.rc.closing = true
	s.rc.mu.Unlock()
	s.stop()
	err := s.lis.Close()
	s.wg.Wait()
	s.files.closeAll()
	return err
}

// reap expires the clients whose lease lapsed.
func (s *Server) reap() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.cfg.Lease/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.st.expire(time.Now())
		}
	}
}

// ServeRPC implements oncrpc.Handler: NULL and COMPOUND of program NFS
// version 4.
func (s *Server) ServeRPC(ctx context.Context, c *oncrpc.Conn, call *oncrpc.Call, args *xdr.Reader, res *xdr.Writer) uint32 {
	if call.Prog != progNFS {
		return oncrpc.ProgUnavail
	}
	if call.Vers != nfsVers4 {
		return oncrpc.ProgMismatch
	}
	switch call.Proc {
	case 0:
		return oncrpc.Success
	case 1:
	default:
		return oncrpc.ProcUnavail
	}
	if call.Flavor != oncrpc.AuthSys && call.Flavor != oncrpc.AuthNone {
		return oncrpc.DenyAuthTooWeak
	}
	peer, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	exp, rule, ok := match(s.cfg.Exports, peer.Addr())
	if !ok {
		return oncrpc.DenyAuthTooWeak
	}
	cred := rpc.Cred{Uid: rule.AnonUid, Gid: rule.AnonGid}
	var gids []uint32
	if call.Sys != nil {
		cred, gids = s.trust(rpc.Cred{Uid: call.Sys.Uid, Gid: call.Sys.Gid}, call.Sys.Gids, peer.Addr())
	}
	if sq := rule.squash(cred); sq.Uid != cred.Uid {
		cred, gids = sq, nil
	} else {
		cred = sq
	}
	// The MDS checks every namespace call's permissions as the caller.
	cp := &compound{s: s, ctx: rpc.WithCred(ctx, cred), conn: c, call: call, cred: cred, gids: gids, exp: exp, rule: rule}
	if !cp.run(args, res) {
		return oncrpc.GarbageArgs
	}
	return oncrpc.Success
}
