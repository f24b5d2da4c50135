// Package client is the Go client library of Strata: namespace calls to
// the MDS by path, and files whose bytes it reads and writes directly and
// in parallel on the data servers the file's layout names (pNFS model; the
// MDS is never in the data path).
//
// Consistency is close-to-open, as NFS: Open fetches fresh attributes and
// layout; Sync and Close make written bytes durable on the data servers and
// then publish size and mtime to the MDS (LAYOUTCOMMIT). Concurrent writers
// to disjoint ranges of one file are correct; the size is the maximum
// committed end.
//
// A file's layout driver follows its redundancy scheme: none stripes;
// mirror:N writes every copy and reads one, falling back to another on an
// unreachable server or a block failing its checksum; rs:K+M encodes
// Reed-Solomon parity in the client and rebuilds what it cannot read from
// any K units of a row (degraded reads). File.SetFaultHandler reports the
// component calls that failed.
//
// Errors from namespace calls are *fs.PathError whose Err satisfies
// errors.Is(err, syscall.ENOENT) and friends.
//
// It imports the transport (daemon/rpc), layout and capability; it must not
// import the daemons.
package client
