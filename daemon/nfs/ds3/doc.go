// Package ds3 is the NFSv3 service of a data server (`strata ds --nfs
// ADDR`): the data path of pNFS flex-files layouts (RFC 8435) that the
// NFSv4.1 front end (daemon/nfs) hands to kernel clients. It serves NULL,
// GETATTR, ACCESS, FSINFO, READ, WRITE (UNSTABLE, FILE_SYNC) and COMMIT on
// component file handles, loosely coupled as RFC 8435 section 2.2 has it:
// the file handle names (inode, layout generation, component, stripe
// geometry) under an HMAC of the cluster secret, so a handle of a replaced
// generation is NFS3ERR_STALE (fenced) and a forged one NFS3ERR_BADHANDLE.
// The synthetic AUTH_SYS identity of a layout names a fence epoch; the
// front end fences a layout a client did not return in time by having the
// data server refuse that epoch on the components (fence.go, a small ONC
// RPC program signed with the cluster secret): NFS3ERR_ACCES.
//
// A flex-files client sends file offsets; a data column stores its stripe
// units densely, so the service maps each offset to the column offset and
// calls its own data server over Strata's protocol with a capability it
// signs itself: the data server checksums every block (CRC32C) exactly as
// for a native write. A short read is judged by the file's size, asked of
// the MDS (missing.go): a hole or the file's end reads zeros, a lost
// component NFS3ERR_IO.
//
// It imports daemon/rpc, layout, the capability package and the NFS wire
// packages; it must not import daemon/ds or daemon/mds.
package ds3
