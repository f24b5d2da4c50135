// Package nfstest holds what the NFS tests share: the NFS front end
// started over a test cluster, the kernel guest prepared once per test
// binary (package nfsguest), a FUSE mount, a counting TCP proxy, and a
// cluster with the NFSv3 service on each data server (pNFS). The kernel
// tests live in several packages so that each stays well inside go test's
// per-package timeout on a loaded machine.
//
// It is for tests only; no daemon imports it.
package nfstest
