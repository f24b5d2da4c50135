package capability

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Op is a bit set of operations a token allows.
type Op uint8

// The operations a token may allow.
const (
	OpRead  Op = 1 << iota // read, stat
	OpWrite                // write, commit, truncate
	OpAdmin                // remove, and every other call on the named file: held only by the MDS
)

// Errors returned by Verify.
var (
	ErrForged  = errors.New("capability: bad signature")
	ErrExpired = errors.New("capability: expired")
	ErrDenied  = errors.New("capability: operation not allowed")
	ErrScope   = errors.New("capability: token is for another file")
	ErrTarget  = errors.New("capability: token is for another data server or column")
	ErrHolder  = errors.New("capability: token was issued to another client")
)

// SecretSize is the length of a cluster secret.
const SecretSize = 32

// Token is a signed grant for one generation of one file. The zero Token
// is invalid.
type Token struct {
	Ino    uint64
	Gen    uint64
	Ops    Op
	Expiry int64  // unix nanoseconds
	Job    string // QoS tag: job id
	Class  uint8  // QoS tag: class
	MAC    []byte
	// Appended later (an older MDS signs none of them, which an older
	// data server ignores):
	Client string // the principal it was issued to (identity.Identity.Principal); empty: the MDS's own
	Target string // the one data server it is good on; empty: any of the file's
	Comp   uint32 // 0: any column of the file; c+1: column c only
}

// Call is what a data server checks a token against: the component it
// names, the operation, the server's own id and the caller's principal.
type Call struct {
	Ino, Gen uint64
	Col      uint32
	Op       Op
	Server   string // this data server's id
	Client   string // the caller's principal; "" if it sent no credential
}

// NewSecret returns a fresh random cluster secret.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("new secret: %w", err)
	}
	return b, nil
}

func (t *Token) mac(secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	var b [8*3 + 2]byte
	binary.LittleEndian.PutUint64(b[0:], t.Ino)
	binary.LittleEndian.PutUint64(b[8:], t.Gen)
	binary.LittleEndian.PutUint64(b[16:], uint64(t.Expiry))
	b[24] = byte(t.Ops)
	b[25] = t.Class
	h.Write(b[:])
	h.Write([]byte(t.Job))
	if t.Client != "" || t.Target != "" || t.Comp != 0 {
		// Length-prefixed, so that no two tokens sign the same bytes.
		var v [4]byte
		for _, f := range []string{t.Job, t.Client, t.Target} {
			binary.LittleEndian.PutUint32(v[:], uint32(len(f)))
			h.Write(v[:])
		}
		h.Write([]byte(t.Client))
		h.Write([]byte(t.Target))
		binary.LittleEndian.PutUint32(v[:], t.Comp)
		h.Write(v[:])
	}
	return h.Sum(nil)
}

// Sign sets t.MAC under secret.
func (t *Token) Sign(secret []byte) { t.MAC = t.mac(secret) }

// Verify checks that t was signed under secret, has not expired at now,
// allows op (an admin token allows every op) and names ino and gen. No
// token is a wildcard: an admin token is for one file too.
func (t *Token) Verify(secret []byte, now time.Time, ino, gen uint64, op Op) error {
	if len(t.MAC) == 0 || !hmac.Equal(t.MAC, t.mac(secret)) {
		return ErrForged
	}
	if now.UnixNano() > t.Expiry {
		return ErrExpired
	}
	if t.Ops&OpAdmin == 0 && t.Ops&op != op {
		return ErrDenied
	}
	if t.Ino != ino || t.Gen != gen {
		return ErrScope
	}
	return nil
}

// Check is Verify for a data server's call c: the token must also name
// the call's column and this server if it names any, and the caller must
// be the client it was issued to if it was issued to one.
func (t *Token) Check(secret []byte, now time.Time, c Call) error {
	if err := t.Verify(secret, now, c.Ino, c.Gen, c.Op); err != nil {
		return err
	}
	if (t.Comp != 0 && t.Comp != c.Col+1) || (t.Target != "" && t.Target != c.Server) {
		return ErrTarget
	}
	if t.Client != "" && t.Client != c.Client {
		return ErrHolder
	}
	return nil
}
