package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-hpc/strata/client"
	cred "github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/jobtier"
)

// hookReadTimeout bounds how long a connection may take to send its
// request line.
const hookReadTimeout = 10 * time.Second

// Deps are the agent's injectable dependencies.
type Deps struct {
	Log *slog.Logger // nil: discard
	// Scontrol runs `scontrol ARGS...` and returns its output; nil runs
	// the scontrol on PATH with this process's environment.
	Scontrol func(args ...string) (string, error)
}

// Server is a node agent. Create it with New, then Start; Close stops
// serving the socket and the drain workers but leaves every tier's
// daemons running, for the next agent to adopt.
type Server struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	global *client.Client // the global namespace, as root: the registry
	gtls   *tls.Config    // Config.GlobalTLS loaded; nil: plain

	stageLim *limiter   // StageRate, shared by every stage-in of the node
	capMu    sync.Mutex // serializes capacity checks (capacity.go)
	ready    chan struct{}

	portMu sync.Mutex // serializes the choice of tier MDS ports (ports.go)
	mu     sync.Mutex // guards tiers and the lifecycle fields
	tiers  map[uint32]*tier
	ln     net.Listener
	state  int // 0 new, 1 started, 2 closed
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop, connections, reapers, drainers, reporters
}

// New checks cfg and returns a Server that is not started yet.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Scontrol == nil {
		deps.Scontrol = func(args ...string) (string, error) {
			// Combined: "Invalid job id specified" is on stderr.
			out, err := exec.Command("scontrol", args...).CombinedOutput()
			return string(out), err
		}
	}
	var gtls *tls.Config
	if cfg.GlobalTLS.On() {
		var err error
		if gtls, err = cfg.GlobalTLS.ClientConfig(); err != nil {
			return nil, fmt.Errorf("agent: global namespace: %w", err)
		}
	}
	g, err := client.New(client.Config{MDS: cfg.GlobalMDS, Timeout: 10 * time.Second, FailoverTimeout: 5 * time.Second,
		Auth: cred.NewNodeCredentials(cfg.Secret, cred.RoleNode, cfg.Node, ""), TLS: gtls})
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		deps:   deps,
		log:    deps.Log.With("component", "agent", "node", cfg.Node),
		global: g,
		gtls:   gtls,
		ready:  make(chan struct{}),
		tiers:  map[uint32]*tier{},

		stageLim: newLimiter(cfg.StageRate),
	}
	return s, nil
}

// Start adopts the tiers a previous agent left running, then listens on
// the socket (mode 0600: the plugin runs as root). ctx bounds only the
// start.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 0 {
		return errors.New("agent: started twice")
	}
	for _, d := range []string{s.jobsDir(), s.cfg.NVMeDir, filepath.Dir(s.cfg.Socket)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.adoptAll(ctx)
	// A socket file left by a dead agent is stale: nobody else may own
	// this path.
	if err := os.Remove(s.cfg.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent: remove stale socket: %w", err)
	}
	old := umask(0o177)
	ln, err := net.Listen("unix", s.cfg.Socket)
	umask(old)
	if err != nil {
		return fmt.Errorf("agent: listen: %w", err)
	}
	if err := os.Chmod(s.cfg.Socket, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("agent: socket mode: %w", err)
	}
	s.ln, s.state = ln, 1
	s.wg.Add(1)
	go s.accept()
	close(s.ready)
	s.log.Info("agent_ready", "socket", s.cfg.Socket, "tiers", len(s.tiers))
	return nil
}

// Ready is closed once the socket accepts requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Close stops accepting requests, cancels the ones in progress and the
// drain workers, and waits for them. Tier daemons keep running.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.state != 1 {
		s.state = 2
		s.mu.Unlock()
		return nil
	}
	s.state = 2
	s.cancel()
	err := s.ln.Close()
	s.mu.Unlock()
	s.wg.Wait()
	s.global.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Error("accept_failed", "err", err)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// serveConn answers one request line with one reply line.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	if err := checkPeerRoot(c); err != nil {
		s.log.Warn("hook_refused", "err", err)
		_ = jobtier.WriteHookLine(c, jobtier.HookReply{Error: err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(hookReadTimeout))
	req, err := jobtier.ReadHookRequest(bufio.NewReader(c))
	if err != nil {
		_ = jobtier.WriteHookLine(c, jobtier.HookReply{Error: "strata agent: " + err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	start := time.Now()
	reply := s.handle(req)
	// A prolog or epilog is an event of the node (info); a status call
	// comes with every job step, a request's detail (debug).
	level := slog.LevelInfo
	if req.Op == jobtier.OpStatus && reply.OK {
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, "hook", "op", req.Op, "job_id", req.JobID, "ok", reply.OK,
		"user_error", reply.UserError, "err", reply.Error, "duration", time.Since(start))
	_ = jobtier.WriteHookLine(c, reply)
}

// handle runs one hook request.
func (s *Server) handle(req jobtier.HookRequest) jobtier.HookReply {
	if req.Node != s.cfg.Node {
		return jobtier.HookReply{Error: fmt.Sprintf("strata agent of node %s was asked for node %s (check plugstack.conf socket=)", s.cfg.Node, req.Node)}
	}
	var err error
	switch req.Op {
	case jobtier.OpProlog:
		err = s.Prolog(s.ctx, req)
	case jobtier.OpEpilog:
		err = s.Epilog(s.ctx, req)
	case jobtier.OpStatus:
		return s.waitStatus(req)
	case jobtier.OpCleanup:
		err = s.Cleanup(s.ctx, req.JobID, req.Force)
	}
	switch {
	case err == nil:
		return jobtier.HookReply{OK: true}
	case isJobError(err):
		return jobtier.HookReply{Error: oneLine(err.Error()), UserError: true}
	}
	return jobtier.HookReply{Error: oneLine(fmt.Sprintf("strata agent on %s: %s of job %d: %v", s.cfg.Node, req.Op, req.JobID, err))}
}

// waitStatus answers a status request: at once, or, with Wait, once the
// tier is no longer being set up or staged in (or Wait has passed).
func (s *Server) waitStatus(req jobtier.HookRequest) jobtier.HookReply {
	r := s.Status(req.JobID)
	if !r.Pending || req.Wait <= 0 {
		return r
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(req.Wait)*time.Second)
	defer cancel()
	_ = poll(ctx, 100*time.Millisecond, func() (bool, error) {
		r = s.Status(req.JobID)
		return !r.Pending, nil
	})
	return r
}

// Status answers whether job's tier is usable on this node, and where.
// A tier still being set up or staged in answers Pending.
func (s *Server) Status(job uint32) jobtier.HookReply {
	t := s.tier(job)
	if t == nil {
		return jobtier.HookReply{Error: fmt.Sprintf("no storage tier was set up for job %d on node %s", job, s.cfg.Node)}
	}
	phase, reason := t.phase()
	switch phase {
	case phaseFailed:
		return jobtier.HookReply{Error: reason}
	case phaseRunning, phaseDraining:
	case phaseStaging:
		st := t.stats()
		return jobtier.HookReply{Pending: true, Error: fmt.Sprintf("the storage tier of job %d is still staging in (%d files, %d bytes on node %s so far)",
			job, st.StagedFiles, st.StagedBytes, s.cfg.Node)}
	default:
		return jobtier.HookReply{Pending: phase == phaseAssembling, Error: fmt.Sprintf("the storage tier of job %d is still %s", job, phase)}
	}
	if !t.mounted() {
		return jobtier.HookReply{Error: fmt.Sprintf("the storage tier of job %d is not mounted on node %s", job, s.cfg.Node)}
	}
	t.smu.Lock()
	r := jobtier.HookReply{OK: true, TierDir: t.st.MountPath}
	t.smu.Unlock()
	if _, err := os.Stat(s.hintsPath(job)); err == nil {
		r.ROMIOHints = s.hintsPath(job)
	}
	return r
}

// tier returns the tier of job, or nil.
func (s *Server) tier(job uint32) *tier {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tiers[job]
}

// oneLine makes a message fit the plugin's one line.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 900 {
		msg = msg[:900] + "..."
	}
	return msg
}
