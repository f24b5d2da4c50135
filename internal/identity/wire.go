package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// macSize is the length of every credential's HMAC-SHA256.
const macSize = sha256.Size

// maxString bounds the strings a credential carries (node names, ids).
const maxString = 255

// maxGroups bounds the supplementary groups a session carries (Linux's
// NGROUPS_MAX is 65536, but NSS answers for real users are far shorter).
const maxGroups = 1024

// Keys are the HMAC keys derived from the cluster secret, one per kind of
// credential, so that a token of one kind never verifies as another.
type Keys struct {
	session []byte
	node    []byte
}

// DeriveKeys derives the credential keys from the cluster secret.
func DeriveKeys(secret []byte) Keys {
	d := func(label string) []byte {
		h := hmac.New(sha256.New, secret)
		h.Write([]byte(label))
		return h.Sum(nil)
	}
	return Keys{session: d("strata session v1"), node: d("strata node credential v1")}
}

func sum(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
}

func (r *reader) byte(what string) byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail(what)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != len(binary.AppendUvarint(nil, v)) { // minimal only: one encoding per value
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) u32(what string) uint32 {
	v := r.uvarint(what)
	if v > 1<<32-1 {
		r.fail(what)
	}
	return uint32(v)
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || n != len(binary.AppendVarint(nil, v)) {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil || n > maxString || n > uint64(len(r.b)) {
		r.fail(what)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) mac() []byte {
	if r.err != nil || len(r.b) != macSize {
		r.fail("mac")
		return nil
	}
	m := append([]byte(nil), r.b...)
	r.b = nil
	return m
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
