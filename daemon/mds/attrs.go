package mds

import (
	"slices"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// Limits of extended attributes: a name and a value as Linux's
// XATTR_NAME_MAX and XATTR_SIZE_MAX; per inode, as ext4 bounds them by the
// space of its xattr block, a count and a total of names and values
// (ENOSPC past either, as ext4 answers).
const (
	maxXattrName  = 255
	maxXattrValue = 64 << 10
	maxXattrs     = 128       // attributes of one inode
	maxXattrBytes = 256 << 10 // names and values of one inode together
)

// xattrRoom refuses setting name to value on n when the inode would then
// hold more attributes, or more bytes of them, than the limits.
func xattrRoom(n *inode, name string, value []byte) error {
	count, total := len(n.Xattrs)+1, len(name)+len(value)
	for k, v := range n.Xattrs {
		if k == name {
			count--
			continue
		}
		total += len(k) + len(v)
	}
	switch {
	case count > maxXattrs:
		return errf(syscall.ENOSPC, "xattr %q: inode %d already has %d extended attributes, the most one may have", name, n.Ino, maxXattrs)
	case total > maxXattrBytes:
		return errf(syscall.ENOSPC, "xattr %q: the extended attributes of inode %d would take %d bytes, more than %d", name, n.Ino, total, maxXattrBytes)
	}
	return nil
}

// checkXattr refuses attribute names outside the namespaces Strata stores
// and values larger than the limit.
func checkXattr(name string, value []byte) error {
	switch {
	case len(name) > maxXattrName:
		return errf(syscall.ERANGE, "xattr name %q... is %d bytes, longer than %d", name[:32], len(name), maxXattrName)
	case !strings.HasPrefix(name, "user.") && !strings.HasPrefix(name, "trusted.") && !strings.HasPrefix(name, "security."):
		return errf(syscall.EOPNOTSUPP, "xattr %q: only the user., trusted. and security. namespaces are supported", name)
	case len(value) > maxXattrValue:
		return errf(syscall.E2BIG, "xattr %q: value is %d bytes, more than %d", name, len(value), maxXattrValue)
	}
	return nil
}

func (st *state) applySetattr(c *setattrCmd) result {
	r := &c.Req
	n, err := st.node(r.Ino)
	if err != nil {
		return fail(err)
	}
	if r.Valid&rpc.SetSize != 0 {
		switch {
		case n.isDir():
			return fail(errf(syscall.EISDIR, "inode %d is a directory: cannot set its size", r.Ino))
		case !n.isFile():
			return fail(errf(syscall.EINVAL, "inode %d is not a regular file: cannot set its size", r.Ino))
		case n.Inline && r.Size > rpc.MaxInline:
			return fail(errf(syscall.EFBIG, "inode %d is inline: %d bytes is past the largest inline file", r.Ino, r.Size))
		}
	}
	w := st.w(r.Ino)
	if r.Valid&rpc.SetMode != 0 {
		w.Mode = w.Mode&rpc.TypeMask | r.Mode&0o7777
	}
	if r.Valid&rpc.SetUid != 0 {
		w.Uid = r.Uid
	}
	if r.Valid&rpc.SetGid != 0 {
		w.Gid = r.Gid
	}
	if r.Valid&rpc.SetSize != 0 {
		w.Size = r.Size
		w.Mtime = c.Now
		if w.Inline {
			w.resizeInline()
		}
	}
	if r.Valid&rpc.SetAtime != 0 {
		w.Atime = r.Atime
	}
	if r.Valid&rpc.SetMtime != 0 {
		w.Mtime = r.Mtime
	}
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applySetXattr(c *xattrCmd) result {
	n, err := st.node(c.Ino)
	if err != nil {
		return fail(err)
	}
	if err := checkXattr(c.Name, c.Value); err != nil {
		return fail(err)
	}
	if c.Name == rpc.LayoutXattr {
		if !n.isDir() {
			// Files are re-placed by relayoutCmd; the handler never sends this.
			return fail(errf(syscall.EINVAL, "inode %d: %s can be set on a directory or an empty file", c.Ino, c.Name))
		}
		return st.setPolicy(c, n)
	}
	if n.isSymlink() && strings.HasPrefix(c.Name, "user.") {
		return fail(errf(syscall.EPERM, "inode %d is a symbolic link: user. xattrs are not allowed on it", c.Ino))
	}
	_, has := n.Xattrs[c.Name]
	if err := xattrFlags(c, has); err != nil {
		return fail(err)
	}
	if err := xattrRoom(n, c.Name, c.Value); err != nil {
		return fail(err)
	}
	w := st.w(c.Ino)
	if w.Xattrs == nil {
		w.Xattrs = map[string][]byte{}
	}
	w.Xattrs[c.Name] = c.Value
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

// xattrFlags applies XATTR_CREATE and XATTR_REPLACE.
func xattrFlags(c *xattrCmd, has bool) error {
	switch {
	case c.Flags&rpc.XattrCreate != 0 && has:
		return errf(syscall.EEXIST, "xattr %q already exists on inode %d", c.Name, c.Ino)
	case c.Flags&rpc.XattrReplace != 0 && !has:
		return errf(syscall.ENODATA, "xattr %q does not exist on inode %d", c.Name, c.Ino)
	}
	return nil
}

// setPolicy sets (or with an empty value removes) a directory's layout
// policy. The check against the registered data servers is deterministic:
// the registry's durable part is FSM state.
func (st *state) setPolicy(c *xattrCmd, n *inode) result {
	p, err := layout.Parse(string(c.Value))
	if err != nil {
		return fail(errf(syscall.EINVAL, "%s on directory %d: %v", c.Name, c.Ino, err))
	}
	if err := st.fits(p); err != nil {
		return fail(errf(syscall.EINVAL, "%s on directory %d: %v", c.Name, c.Ino, err))
	}
	if err := xattrFlags(c, !n.Policy.IsZero()); err != nil {
		return fail(err)
	}
	w := st.w(c.Ino)
	w.Policy = p
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applyRemoveXattr(c *xattrCmd) result {
	n, err := st.node(c.Ino)
	if err != nil {
		return fail(err)
	}
	if err := checkXattr(c.Name, nil); err != nil {
		return fail(err)
	}
	if c.Name == rpc.LayoutXattr {
		switch {
		case n.isFile():
			return fail(errf(syscall.EPERM, "inode %d: a file's layout cannot be removed, only replaced while the file is empty", c.Ino))
		case !n.isDir() || n.Policy.IsZero():
			return fail(errf(syscall.ENODATA, "inode %d has no layout policy of its own", c.Ino))
		}
		w := st.w(c.Ino)
		w.Policy = layout.Policy{}
		w.Ctime = c.Now
		return result{attr: w.attr()}
	}
	if _, ok := n.Xattrs[c.Name]; !ok {
		return fail(errf(syscall.ENODATA, "xattr %q does not exist on inode %d", c.Name, c.Ino))
	}
	w := st.w(c.Ino)
	delete(w.Xattrs, c.Name)
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

// getXattr returns an attribute's value; for the layout xattr, a file's
// layout or a directory's effective policy (own, inherited, default).
func (st *state) getXattr(ino uint64, name string, def layout.Policy) ([]byte, error) {
	n, err := st.node(ino)
	if err != nil {
		return nil, err
	}
	if err := checkXattr(name, nil); err != nil {
		return nil, err
	}
	if name == rpc.LayoutXattr {
		switch {
		case n.isFile():
			return []byte(n.Layout.String()), nil
		case n.isDir():
			p, _ := st.policy(ino, def)
			return []byte(p.String()), nil
		}
	}
	v, ok := n.Xattrs[name]
	if !ok {
		return nil, errf(syscall.ENODATA, "xattr %q does not exist on inode %d", name, ino)
	}
	return v, nil
}

// listXattr returns the names of an inode's attributes in order, with the
// layout xattr for files and for directories that have a policy.
func (st *state) listXattr(ino uint64) ([]string, error) {
	n, err := st.node(ino)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(n.Xattrs)+1)
	for k := range n.Xattrs {
		names = append(names, k)
	}
	if n.isFile() || (n.isDir() && !n.Policy.IsZero()) {
		names = append(names, rpc.LayoutXattr)
	}
	slices.Sort(names)
	return names, nil
}

func (st *state) applyRelayout(c *relayoutCmd) result {
	n, err := st.node(c.Ino)
	if err != nil {
		return fail(err)
	}
	if !n.isFile() {
		return fail(errf(syscall.EINVAL, "inode %d is not a regular file", c.Ino))
	}
	if n.Size > 0 {
		return fail(errf(syscall.EEXIST, "cannot change the layout of a file that has data (size %d)", n.Size))
	}
	if err := c.Layout.Validate(); err != nil {
		return fail(errf(syscall.EINVAL, "inode %d: %v", c.Ino, err))
	}
	old := n.Layout
	if len(old.Targets) > 0 {
		st.orphans[orphanKey{Ino: c.Ino, Gen: old.Generation}] = orphan{Ino: c.Ino, Layout: old}
	}
	lay := c.Layout
	lay.Generation = old.Generation + 1
	w := st.w(c.Ino)
	w.Layout = lay
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applyCommit(c *commitCmd) result {
	n, err := st.node(c.Ino)
	if err != nil {
		return fail(err)
	}
	if !n.isFile() {
		return fail(errf(syscall.EINVAL, "inode %d is not a regular file", c.Ino))
	}
	if c.Gen != n.Layout.Generation {
		return result{attr: n.attr()} // a writer of a replaced layout: ignored
	}
	w := st.w(c.Ino)
	if c.KillPriv {
		w.Mode = w.Mode&^0o7777 | c.Mode&0o7777
	}
	if c.End > w.Size && !w.Inline { // an inline file's size is its bytes' (inline.go)
		w.Size = c.End
	}
	w.Mtime = c.Mtime
	if c.Mtime == 0 {
		w.Mtime = c.Now
	}
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applyRegister(c *registerCmd) result {
	if err := checkDSNames(&rpc.HeartbeatReq{ID: c.ID, Addr: c.Addr, Node: c.Node, Rack: c.Rack}); err != nil {
		return fail(err) // the leader checks first: only an older leader's entry gets here
	}
	st.ds[c.ID] = dsRecord{ID: c.ID, Addr: c.Addr, Node: c.Node, Rack: c.Rack}
	return result{}
}

func (st *state) applyPurge(c *purgeCmd) result {
	for _, k := range c.Orphans {
		delete(st.orphans, k)
	}
	return result{}
}
