package admin

import (
	"context"
	"errors"
	"net/http"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Errors the admin API answers with.
var (
	// ErrNotFound is answered to a path the API does not serve.
	ErrNotFound = errors.New("admin: not found")
	// ErrMethodNotAllowed is answered to a known path with a method it
	// does not take.
	ErrMethodNotAllowed = errors.New("admin: method not allowed")
	// ErrNotServing is wrapped when the MDS answers but cannot serve the
	// namespace (no leader, election in progress).
	ErrNotServing = errors.New("admin: mds not serving")
	// ErrBadRequest is answered to a request whose path or parameters
	// are malformed.
	ErrBadRequest = errors.New("admin: bad request")
	// ErrUnauthorized is answered to a change without the admin token.
	ErrUnauthorized = errors.New("admin: unauthorized")
	// ErrForbidden is answered to a change the API does not make.
	ErrForbidden = errors.New("admin: forbidden")
	// errNoState is a Source that answered neither state nor error.
	errNoState = errors.New("admin: source returned no cluster state")
)

// statusOf is the one table that maps errors to HTTP status codes: the
// first case that matches (errors.Is) wins; anything else is a 500.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, syscall.ENOENT):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest), errors.Is(err, syscall.EINVAL):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return http.StatusForbidden
	case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOSPC):
		return http.StatusConflict
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case errors.Is(err, ErrNotServing), errors.Is(err, rpc.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
