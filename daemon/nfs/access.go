package nfs

import (
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Permission bits as POSIX checks them.
const (
	permR = 4
	permW = 2
	permX = 1
)

// may reports whether the caller has the permission bits want on a, the
// way the kernel decides it: owner, then group, then other; root may do
// anything but execute a file nobody may execute.
func (c *compound) may(a *rpc.Attr, want uint32) bool {
	mode := a.Mode & 0o777
	if c.cred.Uid == 0 {
		if want&permX != 0 && !a.IsDir() && mode&0o111 == 0 {
			return false
		}
		return true
	}
	var bits uint32
	switch {
	case c.cred.Uid == a.Uid:
		bits = mode >> 6
	case c.inGroup(a.Gid):
		bits = mode >> 3
	default:
		bits = mode
	}
	return bits&7&want == want
}

func (c *compound) inGroup(g uint32) bool {
	if c.cred.Gid == g {
		return true
	}
	for _, x := range c.gids {
		if x == g {
			return true
		}
	}
	return false
}

// writable returns NFS4ERR_ROFS for a read-only export.
func (c *compound) writable() uint32 {
	if c.rule.ReadOnly {
		return nfs4errRofs
	}
	return nfs4OK
}

// mayModifyDir checks write and search permission on directory ino.
func (c *compound) mayModifyDir(ino uint64) uint32 {
	if st := c.writable(); st != nfs4OK {
		return st
	}
	a, st := c.attr(ino)
	if st != nfs4OK {
		return st
	}
	if !a.IsDir() {
		return nfs4errNotdir
	}
	if !c.may(a, permW|permX) {
		return nfs4errAccess
	}
	return nfs4OK
}

func (c *compound) access(r *xdr.Reader, w *xdr.Writer) uint32 {
	want := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	var got uint32
	if c.may(a, permR) {
		got |= accessRead
	}
	if a.IsDir() {
		if c.may(a, permX) {
			got |= accessLookup
		}
		if c.may(a, permW|permX) && !c.rule.ReadOnly {
			got |= accessModify | accessExtend | accessDelete
		}
	} else {
		if c.may(a, permW) && !c.rule.ReadOnly {
			got |= accessModify | accessExtend
		}
		if c.may(a, permX) {
			got |= accessExecute
		}
	}
	all := uint32(accessRead | accessLookup | accessModify | accessExtend | accessDelete | accessExecute)
	if c.minor >= 2 { // extended attributes (xattr.go)
		all |= accessXaread | accessXawrite | accessXalist
		if c.may(a, permR) {
			got |= accessXaread | accessXalist
		}
		if c.may(a, permW) && !c.rule.ReadOnly {
			got |= accessXawrite
		}
	}
	w.Uint32(want & all)
	w.Uint32(got & want)
	return nfs4OK
}
