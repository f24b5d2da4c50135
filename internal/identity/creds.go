package identity

import (
	"context"
	"os"
	"sync"
	"time"
)

// nodeCredLife is how long a node credential a daemon makes lives; it
// makes a new one when less than half of that is left.
const nodeCredLife = 5 * time.Minute

// NodeCredentials makes the node credentials of one daemon: signed with
// the cluster secret, naming its role, node and id, acting for the actor
// of each call's context (WithActor), else for the process's own uid and
// gid. It is safe for concurrent use.
type NodeCredentials struct {
	keys  Keys
	role  Role
	node  string
	id    string
	self  Actor
	clock func() time.Time

	mu    sync.Mutex
	cache map[Actor]nodeHeader
}

type nodeHeader struct {
	value  string
	expiry time.Time
}

// NewNodeCredentials returns the credentials of a daemon of role on node
// (id: a data server's or MDS's id) holding secret.
func NewNodeCredentials(secret []byte, role Role, node, id string) *NodeCredentials {
	if node == "" {
		node, _ = os.Hostname()
	}
	return &NodeCredentials{
		keys: DeriveKeys(secret), role: role, node: node, id: id,
		self:  Actor{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())},
		clock: time.Now, cache: map[Actor]nodeHeader{},
	}
}

// WithClock sets the clock credentials are dated by (tests); it returns n.
func (n *NodeCredentials) WithClock(clock func() time.Time) *NodeCredentials {
	n.clock = clock
	return n
}

// Header returns the Authorization header of a call made in ctx.
func (n *NodeCredentials) Header(ctx context.Context) (string, error) {
	a, ok := ActorFrom(ctx)
	if !ok {
		a = n.self
	}
	now := n.clock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if h, ok := n.cache[a]; ok && now.Add(nodeCredLife/2).Before(h.expiry) {
		return h.value, nil
	}
	exp := now.Add(nodeCredLife)
	c := NodeCred{Role: n.role, Node: n.node, ID: n.id, Uid: a.Uid, Gid: a.Gid, Expiry: exp.UnixNano()}
	c.Sign(n.keys)
	h := nodeHeader{value: FormatHeader(SchemeNode, c.Encode()), expiry: exp}
	if len(n.cache) > 1024 {
		clear(n.cache)
	}
	n.cache[a] = h
	return h.value, nil
}

// Credentials make the Authorization header of a process's calls.
type Credentials interface {
	// Header returns the header value for a call made in ctx.
	Header(ctx context.Context) (string, error)
}

var _ Credentials = (*NodeCredentials)(nil)

// ActingFor returns credentials whose every call acts for a, whatever the
// call's context says: a node daemon's client that serves one user only
// (the agent's stage-in and drains for a job's user), so that the MDS
// checks each call as that user's. Credentials that cannot act for
// another user (a session) are returned unchanged.
func ActingFor(c Credentials, a Actor) Credentials {
	if n, ok := c.(*NodeCredentials); ok {
		return actingFor{n: n, a: a}
	}
	return c
}

type actingFor struct {
	n *NodeCredentials
	a Actor
}

func (f actingFor) Header(ctx context.Context) (string, error) {
	return f.n.Header(WithActor(ctx, f.a))
}
