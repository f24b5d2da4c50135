// Package rpc is the one transport of Strata's internal RPCs: a compact,
// versioned binary encoding of message structs (codec.go), the message
// types of the MDS and DS protocols (mdsmsg.go, dsmsg.go), the wire error
// carrying a POSIX errno (errors.go), and fasthttp-based server and client
// with keep-alive pools (server.go, client.go).
//
// A request is an HTTP/1.1 POST to /rpc/<method>. Its body is a frame:
// one version byte, a uvarint header length, the encoded message, then for
// data operations the raw bytes. Responses use the same frame; a failed
// call answers a non-2xx status with an encoded Error.
//
// It knows nothing of the MDS's or DS's internals.
package rpc
