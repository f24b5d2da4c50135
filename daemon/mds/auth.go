package mds

import (
	"context"
	"fmt"
	"net/netip"
	"os/user"
	"strconv"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// Who may call what. Every call but the health check (cluster) carries a
// credential the MDS verifies (internal/identity): a session token opened
// with MUNGE (a user's process) or a node credential made with the cluster
// secret (a node daemon). Then the method's access rule applies; the
// handlers check file permissions with the caller's identity
// (identity.FromContext).

// access is who may call a method.
type access uint8

const (
	accessUser  access = iota // any authenticated caller; the handler checks permissions
	accessOpen                // anyone: the health check
	accessMunge               // a MUNGE credential: opening a session
	accessAdmin               // an admin: root on a trusted node, or the admin group
	accessDS                  // a data server
	accessAgent               // a node daemon (the agent), or an admin
)

// methodAccess lists every method that is not accessUser.
var methodAccess = map[string]access{
	rpc.MCluster:       accessOpen,
	rpc.MAuthSession:   accessMunge,
	rpc.MHeartbeat:     accessDS,
	rpc.MScrubReport:   accessDS,
	rpc.MAddVoter:      accessAdmin,
	rpc.MRemoveVoter:   accessAdmin,
	rpc.MDSDrain:       accessAdmin,
	rpc.MDSList:        accessAdmin,
	rpc.MScrubStart:    accessAdmin,
	rpc.MScrubStatus:   accessAdmin,
	rpc.MRebuildStatus: accessAdmin,
	rpc.MGCScan:        accessAdmin,
	rpc.MTierPut:       accessAgent,
	rpc.MQoSDrain:      accessAgent,
}

// authState is the server's verifier and policy.
type authState struct {
	v     *identity.Verifier
	munge identity.Munge
	owner int64 // -1: none
	off   bool
}

func newAuthState(cfg Config) (*authState, error) {
	admin, err := lookupGroup(cfg.AdminGroup)
	if err != nil {
		return nil, fmt.Errorf("%w: admin group: %w", ErrConfig, err)
	}
	owner, err := parseOwner(cfg.Owner)
	if err != nil {
		return nil, fmt.Errorf("%w: owner: %w", ErrConfig, err)
	}
	v := identity.NewVerifier(identity.VerifierConfig{
		Secret:     cfg.Secret,
		Nodemap:    identity.Nodemap{Trusted: cfg.TrustedNodes, Rules: cfg.Squash},
		AdminGroup: admin,
	})
	return &authState{v: v, munge: identity.Munge{Socket: cfg.MungeSocket}, owner: owner, off: cfg.NoAuth}, nil
}

// lookupGroup resolves an admin group given by name or number; -1 for "".
func lookupGroup(g string) (int64, error) {
	if g == "" {
		return -1, nil
	}
	if n, err := strconv.ParseUint(g, 10, 32); err == nil {
		return int64(n), nil
	}
	gr, err := user.LookupGroup(g)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(gr.Gid, 10, 32)
	if err != nil {
		return 0, err
	}
	return int64(n), nil
}

// parseOwner parses the uid a tier's MDS serves; -1 for "".
func parseOwner(s string) (int64, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a uid", s)
	}
	return int64(n), nil
}

type sessionKey struct{}

// authenticate is the RPC server's Authenticator: it verifies the caller
// of method and applies the method's access rule.
func (s *Server) authenticate(ctx context.Context, method string, hdr []byte, peer netip.Addr) (context.Context, error) {
	a := s.auth
	if a.off {
		return ctx, nil
	}
	rule := methodAccess[method]
	switch rule {
	case accessOpen:
		return ctx, nil
	case accessMunge:
		return s.openSession(ctx, hdr, peer)
	}
	id, err := a.v.Verify(hdr, peer)
	if err != nil {
		return nil, rpc.Errorf(syscall.EACCES, "mds: "+method+": "+err.Error())
	}
	if err := a.allowed(id, rule); err != nil {
		return nil, rpc.Errorf(syscall.EACCES, "mds: "+method+": "+err.Error())
	}
	return identity.NewContext(ctx, id), nil
}

// allowed applies rule, and the owner of a job tier, to id.
func (a *authState) allowed(id *identity.Identity, rule access) error {
	if a.owner >= 0 && !id.Admin && id.Role != identity.RoleDS && id.Role != identity.RoleMDS && int64(id.Uid) != a.owner {
		return fmt.Errorf("%w: this job tier serves only uid %d (and its node daemons), not uid %d", identity.ErrDenied, a.owner, id.Uid)
	}
	switch rule {
	case accessAdmin:
		if !id.Admin {
			return fmt.Errorf("%w: an admin operation (root on a trusted node, or the admin group); uid %d (%s) is not an admin", identity.ErrDenied, id.Uid, id.Role)
		}
	case accessDS:
		if id.Role != identity.RoleDS {
			return fmt.Errorf("%w: only a data server may send this (the caller is a %s)", identity.ErrDenied, id.Role)
		}
	case accessAgent:
		if id.Role != identity.RoleNode && !id.Admin {
			return fmt.Errorf("%w: only a node agent may send this (the caller is a %s)", identity.ErrDenied, id.Role)
		}
	}
	return nil
}

// openSession verifies the MUNGE credential in hdr with munged and opens
// a session; the handler (authSession) returns it.
func (s *Server) openSession(ctx context.Context, hdr []byte, peer netip.Addr) (context.Context, error) {
	scheme, cred, err := identity.ParseHeader(hdr)
	if err == nil && scheme != identity.SchemeMunge {
		err = fmt.Errorf("%w: opening a session needs a MUNGE credential", identity.ErrUnauthenticated)
	}
	var mc *identity.MungeCred
	if err == nil {
		mc, err = s.auth.munge.Decode(ctx, cred)
	}
	var sess *identity.Session
	var id *identity.Identity
	if err == nil {
		sess, id, err = s.auth.v.OpenSession(mc, peer, s.cfg.SessionTTL)
	}
	if err == nil {
		err = s.auth.allowed(id, accessUser)
	}
	if err != nil {
		return nil, rpc.Errorf(syscall.EACCES, "mds: open a session: "+err.Error())
	}
	s.log.Info("session_opened", "uid", sess.Uid, "gid", sess.Gid, "node", sess.Node)
	return context.WithValue(identity.NewContext(ctx, id), sessionKey{}, sess), nil
}

// authSession serves rpc.MAuthSession.
func (s *Server) authSession(ctx context.Context, _ *rpc.Empty) (*rpc.AuthSessionResp, error) {
	sess, ok := ctx.Value(sessionKey{}).(*identity.Session)
	if !ok {
		return nil, errf(syscall.EACCES, "mds: sessions are not in use (authentication is off)")
	}
	return &rpc.AuthSessionResp{Token: sess.Encode(), Expiry: sess.Expiry, Uid: sess.Uid, Gid: sess.Gid, Groups: sess.Groups}, nil
}

// checkDSIdentity binds a data server's id to its credential and its
// node: the heartbeat of id must come with that data server's own
// credential, and while the server registered under id is up, a server on
// another node cannot take the id over. (One restarted on its node may
// come back on a new address.)
func (s *Server) checkDSIdentity(ctx context.Context, r *rpc.HeartbeatReq, rec dsRecord, known bool) error {
	if id, ok := identity.FromContext(ctx); ok {
		if id.ID != r.ID {
			return errf(syscall.EACCES, "mds: heartbeat for data server %q with the credential of data server %q", r.ID, id.ID)
		}
		if r.Node != "" && id.Node != r.Node {
			return errf(syscall.EACCES, "mds: heartbeat for node %q with a credential of node %q", r.Node, id.Node)
		}
	}
	if known && rec.Node != r.Node && s.reg.up(r.ID) {
		return errf(syscall.EEXIST, "mds: data server %s is registered on node %s (at %s) and up; a server on node %s (at %s) cannot take over its id", r.ID, rec.Node, rec.Addr, r.Node, r.Addr)
	}
	return nil
}

// StartScrub has every data server that is up verify every block now: the
// admin REST API's POST /v1/scrub (which checks the caller itself).
func (s *Server) StartScrub(ctx context.Context) error {
	if !s.isLeader() {
		return s.notLeader()
	}
	_, err := s.scrubStart(ctx, &rpc.Empty{})
	return err
}

// Drain drains data server id, or with cancel stops draining it: the
// admin REST API's /v1/drain/{id}.
func (s *Server) Drain(ctx context.Context, id string, cancel bool) error {
	if !s.isLeader() {
		return s.notLeader()
	}
	_, err := s.dsDrain(ctx, &rpc.DrainReq{ID: id, Cancel: cancel})
	return err
}
