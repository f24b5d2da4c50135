package identity

import (
	"context"
	"slices"
)

// Role is what kind of party authenticated.
type Role uint8

// The roles. A user's process is RoleUser; node daemons hold the cluster
// secret and say which one they are.
const (
	RoleNone Role = iota // not authenticated
	RoleUser             // a user's process, proven by MUNGE (a session)
	RoleNode             // a node daemon (mount, agent, root's CLI) acting for a local user
	RoleDS               // a data server, with its id
	RoleMDS              // an MDS replica, with its id
	roleEnd
)

func (r Role) String() string {
	switch r {
	case RoleUser:
		return "user"
	case RoleNode:
		return "node"
	case RoleDS:
		return "ds"
	case RoleMDS:
		return "mds"
	}
	return "none"
}

// NobodyID is the uid and gid squashed callers get unless the nodemap
// names others.
const NobodyID = 65534

// Identity is the verified caller of one request. Its fields are read-only
// once it is in a context.
type Identity struct {
	Uid    uint32
	Gid    uint32   // primary group
	Groups []uint32 // supplementary groups, resolved by the MDS (NSS), never taken from the wire
	Role   Role
	Node   string // node name of a node credential; the client's address of a session
	ID     string // the data server's or MDS's id (RoleDS, RoleMDS)
	Addr   string // the address (IP) the request came from

	// Squashed says the nodemap replaced the uid and gid the credential
	// proved (root squash, or every uid mapped to one).
	Squashed bool
	// Admin says the caller may run admin operations: root on a trusted
	// node (not squashed), or a member of the configured admin group.
	Admin bool
	// Principal is what a capability is bound to: one session, or one
	// node's credentials.
	Principal string
}

// InGroup reports whether gid is the caller's primary or one of its
// supplementary groups.
func (id *Identity) InGroup(gid uint32) bool {
	return id.Gid == gid || slices.Contains(id.Groups, gid)
}

// IsDaemon reports whether the caller is a node daemon of any kind.
func (id *Identity) IsDaemon() bool {
	return id.Role == RoleNode || id.Role == RoleDS || id.Role == RoleMDS
}

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the caller of the request ctx belongs to, or nil
// and false when nobody authenticated (a health check, or a server that
// does not check).
func FromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(*Identity)
	return id, ok && id != nil
}

// Actor is the local user a node daemon acts for in one call.
type Actor struct {
	Uid, Gid uint32
}

type actorKey struct{}

// WithActor returns ctx in which a node daemon's calls act for a (the
// FUSE mount: the uid and gid of the process that made the file system
// call). Credentials that cannot act for another user ignore it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor WithActor put in ctx.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}
