// Package fuse mounts a Strata namespace as a POSIX file system with FUSE
// (hanwen/go-fuse/v2, its fs API), over the client library: `strata mount`
// runs it in the foreground, and a daemon (the job-tier agent) can mount in
// process with Mount.
//
// What it owns: the translation of kernel requests into client calls, by
// inode (client/inode.go), and the errors of those calls into
// syscall.Errno, which happens here and only here. Permissions are the
// kernel's (default_permissions); byte-range locks (fcntl and flock) go to
// the MDS lock table through the client, so two mounts of one namespace
// exclude each other.
//
// Consistency is close-to-open, as NFS: open fetches fresh attributes and
// the layout, and keeps the kernel's page cache only if the file did not
// change since the last open; flush (close), fsync and release make the
// written bytes durable on the data servers and publish the size
// (LAYOUTCOMMIT). Writes are gathered per open inode into buffers of a
// stripe row and written behind, in parallel, bounded per mount
// (Options.WriteBehind); an error of a write behind fails the next writes
// and is reported by the next flush (close) or fsync of the file. Forward
// reads are read ahead (readahead.go), and bursts of lookups in one
// directory are answered from one listing while it is fresh (statahead,
// dircache.go). A file unlinked while open on this
// mount is renamed to ".strata-open-*" until its last close, as NFS does
// ("silly rename").
//
// It imports the client library, daemon/rpc (messages and errno mapping)
// and go-fuse; it must not import the daemons.
package fuse
