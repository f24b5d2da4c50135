// Package xdr encodes and decodes XDR (RFC 4506), the data representation
// of ONC RPC and NFS. A Reader decodes one message held in memory with a
// sticky error and explicit bounds on every variable-length item, so that a
// malformed or hostile message ends in an error, never in a panic or a huge
// allocation; a Writer appends to a byte slice.
//
// No Go library fitted: the XDR packages on the module proxy
// (davecgh/go-xdr, stellar/go-xdr) decode through reflection into structs
// and do not let the caller bound each array and opaque, which a server
// facing the network needs. This one is a few hundred lines.
//
// It imports only the standard library.
package xdr
