// Package posix decides whether a caller may do an operation on an inode,
// the way Linux decides it on a local file system: owner, group (with
// supplementary groups) and other bits, root's overrides, sticky
// directories, setgid directories, chown and chgrp rules, utimes rules and
// the xattr namespaces.
//
// It is pure policy: it knows nothing of raft, the transport or the MDS's
// state. The MDS leader calls it before raft.Apply, so a refused request
// costs no log space, and puts what it decides (a new file's group and
// mode) into the command, so the FSM stays deterministic.
//
// It imports only the standard library.
package posix
