package identity

import (
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"time"
)

// sessionTag and sessionVersion start every encoded session token.
const (
	sessionTag     = 'S'
	sessionVersion = 1
)

// Session is the token the MDS hands a user's process for a verified MUNGE
// credential: following requests carry it instead of a new credential. It
// is bound to the uid, primary gid and supplementary groups the MDS
// resolved, the address of the node it was opened from, and an expiry.
type Session struct {
	ID     uint64 // random; names the session (capabilities are bound to it)
	Uid    uint32
	Gid    uint32
	Groups []uint32
	Node   string // the IP address the session was opened from
	Expiry int64  // unix nanoseconds
	MAC    []byte
}

func (s *Session) body(b []byte) []byte {
	b = append(b, sessionTag, sessionVersion)
	b = binary.AppendUvarint(b, s.ID)
	b = binary.AppendUvarint(b, uint64(s.Uid))
	b = binary.AppendUvarint(b, uint64(s.Gid))
	b = binary.AppendUvarint(b, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		b = binary.AppendUvarint(b, uint64(g))
	}
	b = appendStr(b, s.Node)
	return binary.AppendVarint(b, s.Expiry)
}

// Sign sets s.MAC under k.
func (s *Session) Sign(k Keys) { s.MAC = sum(k.session, s.body(nil)) }

// Encode returns the token's bytes (signed or not).
func (s *Session) Encode() []byte { return append(s.body(nil), s.MAC...) }

// DecodeSession decodes a session token; it does not verify it.
func DecodeSession(b []byte) (*Session, error) {
	r := reader{b: b}
	if r.byte("tag") != sessionTag || r.byte("version") != sessionVersion {
		r.fail("not a version 1 session token")
	}
	s := &Session{ID: r.uvarint("id"), Uid: r.u32("uid"), Gid: r.u32("gid")}
	n := r.uvarint("group count")
	if n > maxGroups {
		r.fail("too many groups")
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		s.Groups = append(s.Groups, r.u32("group"))
	}
	s.Node = r.str("node")
	s.Expiry = r.varint("expiry")
	s.MAC = r.mac()
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

// Verify checks the token's MAC under k and its expiry at now.
func (s *Session) Verify(k Keys, now time.Time) error {
	if len(s.MAC) != macSize || !hmac.Equal(s.MAC, sum(k.session, s.body(nil))) {
		return fmt.Errorf("%w: session token: bad signature", ErrUnauthenticated)
	}
	if now.UnixNano() > s.Expiry {
		return fmt.Errorf("%w: session token expired at %s; open a new session", ErrUnauthenticated, time.Unix(0, s.Expiry).UTC().Format(time.RFC3339))
	}
	return nil
}
