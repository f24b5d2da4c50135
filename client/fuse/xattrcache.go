package fuse

import (
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Extended attributes known to be absent. `ls -l` asks every file for
// security.selinux and system.posix_acl_access: two GETXATTR requests per
// name, which would each cost an MDS round trip. The attributes the MDS
// sends (lookups, listings, getattr) say whether an inode has any
// extended attribute (rpc.Attr.NoXattrs); for as long as the kernel may
// cache those attributes, a getxattr of an inode that had none is answered
// ENODATA here. An attribute set through this mount is seen at once; one
// set through another mount after the MDS answered is seen once the
// attributes expire, as a size or mode change is. Names the MDS computes
// (rpc.LayoutXattr) always go to it. Names the mount does not carry
// (unsupported) are EOPNOTSUPP without asking.
type noXattrs struct {
	ttl time.Duration

	mu    sync.Mutex
	until map[uint64]time.Time // inode -> when the knowledge expires
}

// noXattrsSweep is how many inodes are remembered before expired ones are
// dropped.
const noXattrsSweep = 1 << 16

// note records what attributes a from the MDS say.
func (x *noXattrs) note(a *rpc.Attr) {
	if x.ttl <= 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !a.NoXattrs {
		delete(x.until, a.Ino)
		return
	}
	if x.until == nil {
		x.until = map[uint64]time.Time{}
	}
	now := time.Now()
	if len(x.until) >= noXattrsSweep {
		for ino, t := range x.until {
			if !t.After(now) {
				delete(x.until, ino)
			}
		}
	}
	x.until[a.Ino] = now.Add(x.ttl)
}

// forget drops what is known of ino: this mount is changing its
// attributes.
func (x *noXattrs) forget(ino uint64) {
	x.mu.Lock()
	delete(x.until, ino)
	x.mu.Unlock()
}

// answer returns the errno for a getxattr of name on ino that needs no
// MDS round trip, or 0 if the MDS must be asked.
func (x *noXattrs) answer(ino uint64, name string) syscall.Errno {
	if unsupported(name) {
		return syscall.EOPNOTSUPP
	}
	if name == rpc.LayoutXattr || len(name) > 255 {
		return 0
	}
	x.mu.Lock()
	t, ok := x.until[ino]
	x.mu.Unlock()
	if ok && time.Now().Before(t) {
		return syscall.ENODATA
	}
	return 0
}

// capabilityXattr holds a file's capabilities (setcap).
const capabilityXattr = "security.capability"

// selinuxXattr is where SELinux keeps a file's label.
const selinuxXattr = "security.selinux"

// unsupported reports whether the mount answers EOPNOTSUPP for the
// extended attribute name, as a file system that does not support it does:
//   - the system. namespace (POSIX ACLs), which Strata does not keep or
//     enforce. A kernel without FUSE_POSIX_ACL passes them on; `ls -l`
//     (and every tool that copies ACLs) asks system.posix_acl_access of
//     every file, and like security.selinux below remembers EOPNOTSUPP
//     for the whole file system but asks again after ENODATA: a long
//     listing of 10,000 files cost 10,000 FUSE requests more with ENODATA;
//   - security.selinux: the mount carries no SELinux labels, as an NFS
//     mount without labeled NFS does; SELinux labels the files of a FUSE
//     mount by policy (genfscon, or the context= mount option), not by
//     this attribute. `ls -l` asks it of every file: EOPNOTSUPP it
//     remembers for the whole file system, ENODATA it asks again per file,
//     so a long listing costs one FUSE request per file fewer;
//   - security.capability: the mount grants no file capabilities (setcap
//     fails rather than appearing to work), as a nosuid mount ignores
//     them. The kernel asks for it before every write(2) to a file; it is
//     answered here, without the MDS.
func unsupported(name string) bool {
	return strings.HasPrefix(name, "system.") || name == selinuxXattr || name == capabilityXattr
}
