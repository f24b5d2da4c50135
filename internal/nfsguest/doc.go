// Package nfsguest boots the real Linux kernel NFS client under qemu for
// tests: it builds a small initramfs from the host's Debian 6.1 kernel
// modules (sunrpc, nfs, nfsv4, nfsv3, the flex-files layout driver),
// busybox and a static Go test program, boots it with qemu's software
// emulation (TCG; KVM is not available everywhere) and returns the guest's
// console. The guest reaches the host only through qemu's user-mode
// network forwards: 10.0.2.100:2049 is the NFS server under test, and each
// further forward maps a guest address to a host loopback port (pNFS data
// servers).
//
// contrib/test-deps.sh installs what it needs: qemu-system-x86,
// linux-image-amd64, busybox-static and xz-utils.
//
// It imports only the standard library; it must not import the daemons.
package nfsguest
