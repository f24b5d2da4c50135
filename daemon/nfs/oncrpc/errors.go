package oncrpc

import "errors"

// Sentinel errors.
var (
	// ErrRecordTooLarge is returned when a record's fragments declare more
	// bytes than the connection's bound: the connection is closed.
	ErrRecordTooLarge = errors.New("oncrpc: record larger than the bound")
	// ErrNotCall is returned for a message that is neither a call nor a reply.
	ErrNotCall = errors.New("oncrpc: message is not a call")
	// ErrClosed is returned by Conn.Call on a closed connection.
	ErrClosed = errors.New("oncrpc: connection closed")
	// ErrBadReply is returned by Conn.Call when the peer's reply is not an
	// accepted success.
	ErrBadReply = errors.New("oncrpc: call not accepted")
)
