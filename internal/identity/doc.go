// Package identity is who is asking: the authenticated caller of an MDS or
// data server request (Identity, carried in the request's context), the
// credentials that prove it on the wire, and the policy that maps them.
//
//   - A user's process proves its uid and gid with MUNGE (munge.go, through
//     the munge and unmunge commands of the host's munged); the MDS answers
//     a verified credential with a session token (session.go) bound to the
//     uid, the groups the MDS resolved (NSS, groups.go), the client's node
//     and an expiry, which the following requests carry.
//   - A node daemon (mount, agent, data server, MDS peer) proves it holds
//     the cluster secret with a node credential (nodecred.go): its role,
//     node, id, the local uid and gid it acts for, and an expiry, under an
//     HMAC keyed from the secret.
//   - A Verifier (verifier.go) checks either kind, applies the nodemap
//     (nodemap.go: untrusted networks squashed to an unprivileged identity)
//     and decides who is an admin.
//   - Credentials (creds.go) is the client side: what a process sends.
//
// Credentials travel in the HTTP Authorization header of an RPC
// (header.go); the data of a request is never part of them.
//
// It imports only the standard library.
package identity
