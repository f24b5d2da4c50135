// Package debpkg holds the test of the Debian package `make deb` builds
// (contrib/deb, docs/install.md): it builds the package, runs lintian,
// installs it on the machine, checks where every file went, verifies the
// systemd units and the fstab generator's mount unit, mounts a test
// cluster with mount -t fuse.strata, then removes and purges the package,
// leaving the machine as it was (an older strata package present before
// the test is put back). It has no code outside its test.
package debpkg
