package identity

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	Secret  []byte        // the cluster secret (required)
	Nodemap Nodemap       // trusted networks and squash rules
	Groups  GroupResolver // supplementary groups of a node daemon's actor; nil: NSS
	// AdminGroup, if not negative, is a gid whose members are admins.
	AdminGroup int64
	Clock      func() time.Time // nil: time.Now
}

// Verifier turns the credential of a request into its Identity. It caches
// verified credentials (a request's cost is then one map lookup), and is
// safe for concurrent use.
type Verifier struct {
	keys   Keys
	nm     Nodemap
	groups GroupResolver
	admin  int64
	clock  func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	id     *Identity
	peer   netip.Addr
	expiry int64
}

// maxCache bounds the verified credentials a Verifier remembers.
const maxCache = 16384

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg VerifierConfig) *Verifier {
	v := &Verifier{keys: DeriveKeys(cfg.Secret), nm: cfg.Nodemap, groups: cfg.Groups, admin: cfg.AdminGroup, clock: cfg.Clock}
	if v.groups == nil {
		v.groups = &NSS{Clock: cfg.Clock}
	}
	if v.clock == nil {
		v.clock = time.Now
	}
	return v
}

// Keys returns the keys the verifier checks credentials with.
func (v *Verifier) Keys() Keys { return v.keys }

// Verify returns the identity an Authorization header proves for a
// request from peer. An empty header, a MUNGE credential (it only opens a
// session) or one that does not verify is an error wrapping
// ErrUnauthenticated.
func (v *Verifier) Verify(header []byte, peer netip.Addr) (*Identity, error) {
	now := v.clock().UnixNano()
	v.mu.Lock()
	c, ok := v.cache[string(header)]
	v.mu.Unlock()
	if ok && c.peer == peer && now <= c.expiry {
		return c.id, nil
	}
	id, expiry, err := v.verify(header, peer)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if v.cache == nil || len(v.cache) >= maxCache {
		v.cache = make(map[string]cached)
	}
	v.cache[string(header)] = cached{id: id, peer: peer, expiry: expiry}
	v.mu.Unlock()
	return id, nil
}

func (v *Verifier) verify(header []byte, peer netip.Addr) (*Identity, int64, error) {
	scheme, cred, err := ParseHeader(header)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	now := v.clock()
	var id *Identity
	var expiry int64
	switch scheme {
	case SchemeNone:
		return nil, 0, fmt.Errorf("%w: the request carries no credential (a user's process needs MUNGE, a daemon the cluster secret)", ErrUnauthenticated)
	case SchemeMunge:
		return nil, 0, fmt.Errorf("%w: a MUNGE credential only opens a session", ErrUnauthenticated)
	case SchemeSession:
		s, err := DecodeSession(cred)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		if err := s.Verify(v.keys, now); err != nil {
			return nil, 0, err
		}
		if !sameNode(s.Node, peer) {
			return nil, 0, fmt.Errorf("%w: session token of node %s presented from %s", ErrUnauthenticated, s.Node, peer)
		}
		id = &Identity{Uid: s.Uid, Gid: s.Gid, Groups: s.Groups, Role: RoleUser, Node: s.Node,
			Principal: "s:" + strconv.FormatUint(s.ID, 16)}
		expiry = s.Expiry
	case SchemeNode:
		c, err := DecodeNodeCred(cred)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		if err := c.Verify(v.keys, now); err != nil {
			return nil, 0, err
		}
		if !v.nm.trusted(peer) {
			return nil, 0, fmt.Errorf("%w: node credential from %s, which is not a trusted network", ErrUnauthenticated, peer)
		}
		id = &Identity{Uid: c.Uid, Gid: c.Gid, Role: c.Role, Node: c.Node, ID: c.ID, Principal: "n:" + c.Node}
		if c.Role == RoleNode {
			id.Groups = v.groups.Groups(c.Uid)
		}
		expiry = c.Expiry
	}
	id.Addr = peer.String()
	v.nm.apply(id, peer)
	id.Admin = v.isAdmin(id)
	return id, expiry, nil
}

func (v *Verifier) isAdmin(id *Identity) bool {
	if id.Squashed || (id.Role != RoleUser && id.Role != RoleNode) {
		return false
	}
	return id.Uid == 0 || (v.admin >= 0 && id.InGroup(uint32(v.admin)))
}

// sameNode reports whether a session opened from node may be used from
// peer: the same address, or both on the loopback.
func sameNode(node string, peer netip.Addr) bool {
	a, err := netip.ParseAddr(node)
	if err != nil {
		return false
	}
	return a == peer || (a.IsLoopback() && peer.IsLoopback())
}

// OpenSession returns a signed session token and its identity for a user
// whose MUNGE credential munged verified, opened from peer, valid for
// ttl. Its groups are the uid's, resolved here; the nodemap applies.
func (v *Verifier) OpenSession(mc *MungeCred, peer netip.Addr, ttl time.Duration) (*Session, *Identity, error) {
	if string(mc.Payload) != SessionPayload {
		return nil, nil, fmt.Errorf("%w: the MUNGE credential was not made to open a Strata session", ErrUnauthenticated)
	}
	var rb [8]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, nil, fmt.Errorf("session id: %w", err)
	}
	s := &Session{ID: binary.LittleEndian.Uint64(rb[:]), Uid: mc.Uid, Gid: mc.Gid,
		Groups: v.groups.Groups(mc.Uid), Node: peer.String(), Expiry: v.clock().Add(ttl).UnixNano()}
	s.Sign(v.keys)
	id := &Identity{Uid: s.Uid, Gid: s.Gid, Groups: s.Groups, Role: RoleUser, Node: s.Node, Addr: s.Node,
		Principal: "s:" + strconv.FormatUint(s.ID, 16)}
	v.nm.apply(id, peer)
	id.Admin = v.isAdmin(id)
	return s, id, nil
}
