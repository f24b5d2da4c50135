// Package permtest holds the permission matrix: every namespace operation
// done by real users (an owner, a member of the owner's group through a
// supplementary group, another user, root, and root squashed by the MDS's
// nodemap, whose oracle is nobody) on the same fixtures in a
// local directory, through a Strata FUSE mount and through the client
// library, where the local file system's answer (the kernel's) is the one
// Strata must give.
//
// The test creates its accounts and group with groupadd and useradd when
// they are missing, runs each caller's operations in a copy of the test
// binary started with setpriv, and needs root and /dev/fuse. The squashed
// root calls from 127.0.0.2, which the test adds to the loopback as a /32
// (so that it is the source address of connections to it) and removes.
//
// It imports the client, the FUSE mount and the test cluster; nothing
// imports it.
package permtest
