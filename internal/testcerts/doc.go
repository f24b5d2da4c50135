// Package testcerts writes the certificates of tests of TLS on the RPC
// transport: a cluster CA with a certificate for 127.0.0.1, and a rogue
// CA with one of its own. It imports only daemon/rpc (for TLSFiles), so
// that any package's tests may use it.
package testcerts
