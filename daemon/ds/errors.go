package ds

import "errors"

// Errors of the data server. Component calls carry them to clients as an
// rpc.Error with the errno given in wireErrno (handlers.go).
var (
	// ErrChecksum is wrapped when a stored block does not match its CRC.
	ErrChecksum = errors.New("ds: checksum mismatch")
	// ErrNoSpace is wrapped when a call would exceed the configured capacity.
	ErrNoSpace = errors.New("ds: no space left")
	// ErrRange is wrapped when an offset, length or size is out of bounds.
	ErrRange = errors.New("ds: invalid range")
	// ErrRemoved is wrapped when a call names a generation of a file that
	// the MDS removed (tombstone.go).
	ErrRemoved = errors.New("ds: file removed")
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("ds: server closed")
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("ds: invalid config")
	// ErrFormat is wrapped when Dir holds a store of another server or
	// geometry, or its format file cannot be read.
	ErrFormat = errors.New("ds: bad store format")
)
