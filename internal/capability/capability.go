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
	OpAdmin                // remove, and everything else: held only by the MDS
)

// Errors returned by Verify.
var (
	ErrForged  = errors.New("capability: bad signature")
	ErrExpired = errors.New("capability: expired")
	ErrDenied  = errors.New("capability: operation not allowed")
	ErrScope   = errors.New("capability: token is for another file")
)

// SecretSize is the length of a cluster secret.
const SecretSize = 32

// Token is a signed grant. The zero Token is invalid.
type Token struct {
	Ino    uint64
	Gen    uint64
	Ops    Op
	Expiry int64  // unix nanoseconds
	Job    string // QoS tag: job id
	Class  uint8  // QoS tag: class
	MAC    []byte
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
	return h.Sum(nil)
}

// Sign sets t.MAC under secret.
func (t *Token) Sign(secret []byte) { t.MAC = t.mac(secret) }

// Verify checks that t was signed under secret, has not expired at now,
// allows op, and (unless it is an admin token) names ino and gen.
func (t *Token) Verify(secret []byte, now time.Time, ino, gen uint64, op Op) error {
	if len(t.MAC) == 0 || !hmac.Equal(t.MAC, t.mac(secret)) {
		return ErrForged
	}
	if now.UnixNano() > t.Expiry {
		return ErrExpired
	}
	if t.Ops&OpAdmin != 0 {
		return nil
	}
	if t.Ops&op != op {
		return ErrDenied
	}
	if t.Ino != ino || t.Gen != gen {
		return ErrScope
	}
	return nil
}
