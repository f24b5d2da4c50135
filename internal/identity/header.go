package identity

import (
	"bytes"
	"encoding/base64"
	"fmt"
)

// Scheme is the kind of credential an Authorization header carries.
type Scheme uint8

// The credential schemes.
const (
	SchemeNone    Scheme = iota
	SchemeSession        // "StrataSession <base64 token>"
	SchemeNode           // "StrataNode <base64 credential>"
	SchemeMunge          // "Munge MUNGE:...:", only to open a session
)

var schemeNames = [...]string{SchemeSession: "StrataSession", SchemeNode: "StrataNode", SchemeMunge: "Munge"}

// maxHeader bounds an Authorization header this package decodes.
const maxHeader = 8 << 10

// FormatHeader returns the Authorization header value carrying cred.
func FormatHeader(s Scheme, cred []byte) string {
	if s == SchemeMunge {
		return schemeNames[s] + " " + string(cred)
	}
	return schemeNames[s] + " " + base64.RawURLEncoding.EncodeToString(cred)
}

// ParseHeader splits an Authorization header value into its scheme and
// the credential's bytes (decoded from base64, except a MUNGE credential,
// which is returned as munge armored it). An empty value is SchemeNone.
func ParseHeader(v []byte) (Scheme, []byte, error) {
	if len(v) == 0 {
		return SchemeNone, nil, nil
	}
	if len(v) > maxHeader {
		return SchemeNone, nil, fmt.Errorf("%w: authorization header of %d bytes", ErrMalformed, len(v))
	}
	name, val, ok := bytes.Cut(v, []byte{' '})
	if !ok || len(val) == 0 {
		return SchemeNone, nil, fmt.Errorf("%w: authorization header without a credential", ErrMalformed)
	}
	for s, n := range schemeNames {
		if n == "" || string(name) != n {
			continue
		}
		if Scheme(s) == SchemeMunge {
			if !bytes.HasPrefix(val, []byte("MUNGE:")) {
				return SchemeNone, nil, fmt.Errorf("%w: not a MUNGE credential", ErrMalformed)
			}
			return SchemeMunge, val, nil
		}
		// Go's base64 skips CR and LF: refuse them, and an empty
		// credential, so a header has one reading.
		if bytes.ContainsAny(val, "\r\n") {
			return SchemeNone, nil, fmt.Errorf("%w: %s credential with a line break", ErrMalformed, n)
		}
		b, err := base64.RawURLEncoding.DecodeString(string(val))
		if err != nil {
			return SchemeNone, nil, fmt.Errorf("%w: %s credential: %v", ErrMalformed, n, err)
		}
		if len(b) == 0 {
			return SchemeNone, nil, fmt.Errorf("%w: authorization header without a credential", ErrMalformed)
		}
		return Scheme(s), b, nil
	}
	return SchemeNone, nil, fmt.Errorf("%w: unknown authorization scheme %.20q", ErrMalformed, name)
}
