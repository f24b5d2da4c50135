// Package nfs is Strata's NFSv4.1/4.2 front end (RFC 8881, RFC 7862): the
// stock Linux kernel client mounts the global namespace with it, no Strata
// software on the client. It runs beside the MDS (`strata mds --nfs ADDR`)
// and reaches the namespace and the data servers through the Go client
// library, as the FUSE mount does: every NFS operation becomes client
// library calls, and READ and WRITE go through client.File.
//
// What it owns: the NFSv4.1 COMPOUND procedure with its bounds (record
// size, operations per compound), sessions and their slot tables and reply
// caches, client records and leases, open and lock state, persistent file
// handles (an inode number under an HMAC, so they survive an MDS restart
// and a change of raft leader), and exports (which networks may mount,
// root squash), and the recall of layouts before the MDS moves a component
// (CB_LAYOUTRECALL; Server.RecallLayouts, which the MDS calls through
// Relay) with the fencing of clients that do not return them. The wire
// formats live in the subpackages xdr and oncrpc.
//
// It must not import the MDS or the data server (daemon/mds, daemon/ds):
// it is a client of them.
package nfs
