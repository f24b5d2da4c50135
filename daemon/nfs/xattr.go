package nfs

import (
	"errors"
	"sort"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Extended attributes (NFSv4.2, RFC 8276): GETXATTR, SETXATTR,
// LISTXATTRS and REMOVEXATTR over the MDS's xattrs. NFS serves the user
// namespace only and its keys carry no prefix: the key "k" is Strata's
// "user.k" (so the layout, user.strata.layout, is "strata.layout"), and
// LISTXATTRS lists only the user namespace. The layout is read and set by
// name but not listed: every file has it, so a new file lists nothing
// (as RFC 8276 clients expect), and cp -a or rsync -X from an NFS mount do
// not copy a Strata layout onto another file system's files. The Linux
// client (4.2 mounts) maps getfattr/setfattr of user.* onto them.

const (
	opGetxattr   = 72
	opSetxattr   = 73
	opListxattrs = 74

	nfs4errNoxattr   = 10095
	nfs4errXattr2big = 10096

	setxattrCreate  = 1 // SETXATTR4_CREATE
	setxattrReplace = 2 // SETXATTR4_REPLACE

	accessXaread  = 0x40
	accessXawrite = 0x80
	accessXalist  = 0x100

	aXattrSupport = 82

	xattrPrefix   = "user."
	maxXattrValue = 64 << 10 // Linux's XATTR_SIZE_MAX
	maxXattrName  = 255      // Linux's XATTR_NAME_MAX, prefix included
)

// xattrOp reports whether op is one of the NFSv4.2 xattr operations,
// which a 4.1 compound may not hold.
func xattrOp(op uint32) bool { return op >= opGetxattr && op <= opRemoveXattr }

// xattrKey decodes an xattrkey4 and returns Strata's name for it.
func xattrKey(r *xdr.Reader) (string, uint32) {
	key := r.String(maxXattrName + 1)
	if r.Err() != nil {
		return "", nfs4errBadxdr
	}
	switch {
	case key == "" || strings.ContainsRune(key, 0):
		return "", nfs4errInval
	case len(xattrPrefix)+len(key) > maxXattrName:
		return "", nfs4errNametoolong
	}
	return xattrPrefix + key, nfs4OK
}

// xattrStatus is statusOf for the MDS's answers to xattr calls.
func xattrStatus(err error) uint32 {
	if !errors.Is(err, rpc.ErrUnavailable) {
		switch rpc.ToErrno(err) {
		case syscall.ENODATA:
			return nfs4errNoxattr
		case syscall.E2BIG, syscall.ERANGE:
			return nfs4errXattr2big
		}
	}
	return statusOf(err)
}

// xattrFile checks the current file handle and that the caller may do
// perm on the file.
func (c *compound) xattrFile(perm uint32) (*rpc.Attr, uint32) {
	if st := c.needFH(); st != nfs4OK {
		return nil, st
	}
	if perm&permW != 0 {
		if st := c.writable(); st != nfs4OK {
			return nil, st
		}
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return nil, st
	}
	if !c.may(a, perm) {
		return nil, nfs4errAccess
	}
	return a, nfs4OK
}

func (c *compound) getxattr(r *xdr.Reader, w *xdr.Writer) uint32 {
	name, st := xattrKey(r)
	if st != nfs4OK {
		return st
	}
	if _, st := c.xattrFile(permR); st != nfs4OK {
		return st
	}
	v, err := c.s.cl.GetXattrIno(c.ctx, c.cur, name)
	if err != nil {
		return xattrStatus(err)
	}
	w.Opaque(v)
	return nfs4OK
}

func (c *compound) setxattr(r *xdr.Reader, w *xdr.Writer) uint32 {
	option := r.Uint32()
	name, st := xattrKey(r)
	if st != nfs4OK {
		return st
	}
	value := r.Opaque(maxXattrValue + 1)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if len(value) > maxXattrValue {
		return nfs4errXattr2big
	}
	var flags uint32
	switch option {
	case 0: // SETXATTR4_EITHER
	case setxattrCreate:
		flags = rpc.XattrCreate
	case setxattrReplace:
		flags = rpc.XattrReplace
	default:
		return nfs4errInval
	}
	before, st := c.xattrFile(permW)
	if st != nfs4OK {
		return st
	}
	if err := c.s.cl.SetXattrIno(c.ctx, c.cur, name, value, flags); err != nil {
		return xattrStatus(err)
	}
	after, _ := c.attr(c.cur)
	changeInfo(w, before, after)
	return nfs4OK
}

func (c *compound) removexattr(r *xdr.Reader, w *xdr.Writer) uint32 {
	name, st := xattrKey(r)
	if st != nfs4OK {
		return st
	}
	before, st := c.xattrFile(permW)
	if st != nfs4OK {
		return st
	}
	if err := c.s.cl.RemoveXattrIno(c.ctx, c.cur, name); err != nil {
		return xattrStatus(err)
	}
	after, _ := c.attr(c.cur)
	changeInfo(w, before, after)
	return nfs4OK
}

// listxattrs lists the user namespace's keys in name order; the cookie
// is the number of keys given before. As many as fit in maxcount bytes
// of reply are given; NFS4ERR_TOOSMALL if not even one does.
func (c *compound) listxattrs(r *xdr.Reader, w *xdr.Writer) uint32 {
	cookie := r.Uint64()
	maxCount := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if _, st := c.xattrFile(permR); st != nfs4OK {
		return st
	}
	all, err := c.s.cl.ListXattrIno(c.ctx, c.cur)
	if err != nil {
		return xattrStatus(err)
	}
	var keys []string
	for _, n := range all {
		if k, ok := strings.CutPrefix(n, xattrPrefix); ok && k != "" && n != rpc.LayoutXattr {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if cookie > uint64(len(keys)) {
		return nfs4errBadCookie
	}
	size := 8 + 4 + 4 // cookie, count, eof
	end := int(cookie)
	for end < len(keys) && size+4+(len(keys[end])+3)&^3 <= int(maxCount) {
		size += 4 + (len(keys[end])+3)&^3
		end++
	}
	if end == int(cookie) && end < len(keys) {
		return nfs4errToosmall
	}
	w.Uint64(uint64(end))
	w.Uint32(uint32(end - int(cookie)))
	for _, k := range keys[cookie:end] {
		w.String(k)
	}
	w.Bool(end == len(keys))
	return nfs4OK
}
