package identity

import (
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"time"
)

const (
	nodeTag     = 'N'
	nodeVersion = 1
)

// MaxNodeCredLife bounds how far in the future a node credential may
// expire: a verifier refuses one that claims to live longer.
const MaxNodeCredLife = time.Hour

// NodeCred is a node daemon's credential: proof that it holds the cluster
// secret, what it is (role, node, id) and the local user it acts for in
// the request (as NFS AUTH_SYS from a trusted host).
type NodeCred struct {
	Role   Role
	Node   string
	ID     string // data server or MDS id; empty for RoleNode
	Uid    uint32
	Gid    uint32
	Expiry int64 // unix nanoseconds
	MAC    []byte
}

func (c *NodeCred) body(b []byte) []byte {
	b = append(b, nodeTag, nodeVersion, byte(c.Role))
	b = appendStr(b, c.Node)
	b = appendStr(b, c.ID)
	b = binary.AppendUvarint(b, uint64(c.Uid))
	b = binary.AppendUvarint(b, uint64(c.Gid))
	return binary.AppendVarint(b, c.Expiry)
}

// Sign sets c.MAC under k.
func (c *NodeCred) Sign(k Keys) { c.MAC = sum(k.node, c.body(nil)) }

// Encode returns the credential's bytes.
func (c *NodeCred) Encode() []byte { return append(c.body(nil), c.MAC...) }

// DecodeNodeCred decodes a node credential; it does not verify it.
func DecodeNodeCred(b []byte) (*NodeCred, error) {
	r := reader{b: b}
	if r.byte("tag") != nodeTag || r.byte("version") != nodeVersion {
		r.fail("not a version 1 node credential")
	}
	c := &NodeCred{Role: Role(r.byte("role"))}
	if c.Role == RoleNone || c.Role == RoleUser || c.Role >= roleEnd {
		r.fail("role")
	}
	c.Node = r.str("node")
	c.ID = r.str("id")
	c.Uid = r.u32("uid")
	c.Gid = r.u32("gid")
	c.Expiry = r.varint("expiry")
	c.MAC = r.mac()
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// Verify checks the credential's MAC under k and its expiry at now.
func (c *NodeCred) Verify(k Keys, now time.Time) error {
	if len(c.MAC) != macSize || !hmac.Equal(c.MAC, sum(k.node, c.body(nil))) {
		return fmt.Errorf("%w: node credential: bad signature (not made with this cluster's secret)", ErrUnauthenticated)
	}
	t := now.UnixNano()
	if t > c.Expiry {
		return fmt.Errorf("%w: node credential expired", ErrUnauthenticated)
	}
	if c.Expiry-t > int64(MaxNodeCredLife) {
		return fmt.Errorf("%w: node credential lives longer than %s", ErrUnauthenticated, MaxNodeCredLife)
	}
	return nil
}
