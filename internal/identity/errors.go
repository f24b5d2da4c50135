package identity

import "errors"

// Errors of this package. Every refusal wraps ErrUnauthenticated or
// ErrDenied; a caller maps both to EACCES.
var (
	// ErrUnauthenticated: the request carries no credential, or one that
	// does not verify (forged, expired, replayed, from another node).
	ErrUnauthenticated = errors.New("identity: not authenticated")
	// ErrDenied: the caller is known but may not do this.
	ErrDenied = errors.New("identity: permission denied")
	// ErrMalformed: identity material that does not decode.
	ErrMalformed = errors.New("identity: malformed credential")
	// ErrMunge: munged refused or could not be reached.
	ErrMunge = errors.New("identity: munge")
	// ErrConfig: a bad nodemap rule or setting.
	ErrConfig = errors.New("identity: bad configuration")
)
