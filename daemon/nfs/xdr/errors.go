package xdr

import "errors"

// Sentinel errors of the decoder.
var (
	// ErrShort is returned when a message ends before an item does.
	ErrShort = errors.New("xdr: message too short")
	// ErrTooLong is returned when a variable-length item declares more
	// elements or bytes than its bound.
	ErrTooLong = errors.New("xdr: item longer than its bound")
	// ErrBadBool is returned for a boolean other than 0 or 1.
	ErrBadBool = errors.New("xdr: boolean not 0 or 1")
)
