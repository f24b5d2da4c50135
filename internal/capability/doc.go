// Package capability signs and verifies the tokens the MDS hands out with
// every layout: HMAC-SHA256 under the cluster secret over the inode,
// generation, allowed operations, expiry and QoS tag. A data server serves
// no request without a valid token.
//
// It imports only the standard library.
package capability
