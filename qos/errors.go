package qos

import "errors"

// Errors of the package.
var (
	ErrUnknownClass = errors.New("qos: unknown class")
	ErrPolicy       = errors.New("qos: bad policy")
	ErrBusy         = errors.New("qos: server busy, too many queued requests")
	ErrClosed       = errors.New("qos: scheduler closed")
)
