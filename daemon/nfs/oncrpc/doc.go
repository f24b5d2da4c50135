// Package oncrpc is ONC RPC version 2 (RFC 5531) over TCP for the NFS
// front end: record marking with a bound on the record size, the call and
// reply headers, AUTH_SYS credentials (RFC 5531 appendix A), and a
// connection loop that dispatches calls to a Handler and can also send
// calls the other way (the NFSv4.1 backchannel).
//
// It imports the standard library and daemon/nfs/xdr only.
package oncrpc
