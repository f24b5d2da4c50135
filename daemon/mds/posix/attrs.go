package posix

// Chmod decides whether c may set n's permission bits to mode and returns
// the bits to store (setattr_prepare): only the owner or root may; the
// setgid bit is dropped when c is neither root nor in n's group.
func Chmod(c *Cred, n *Inode, mode uint32) (uint32, error) {
	mode &= 0o7777
	if !c.owns(n) {
		return 0, ErrNotPermitted
	}
	if !c.Root() && !c.InGroup(n.Gid) {
		mode &^= SetGID
	}
	return mode, nil
}

// Chown decides whether c may give n the owner uid (when setUID) and the
// group gid (when setGID), and returns n's permission bits after the
// change. Only root may change the owner (a no-op change by the owner is
// allowed); the owner may change the group to one of its own groups. As
// Linux, a change of owner or group of anything but a directory clears the
// setuid bit, and the setgid bit when the group may execute (or when c is
// neither root nor in n's current group).
func Chown(c *Cred, n *Inode, uid, gid uint32, setUID, setGID bool) (uint32, error) {
	if setUID && !c.Root() && !(c.Uid == n.Uid && uid == n.Uid) {
		return 0, ErrNotPermitted
	}
	if setGID && !c.Root() && !(c.Uid == n.Uid && (gid == n.Gid || c.InGroup(gid))) {
		return 0, ErrNotPermitted
	}
	mode := n.Mode & 0o7777
	if n.IsDir() || !(setUID || setGID) {
		return mode, nil
	}
	mode &^= SetUID
	if mode&SetGID != 0 && (mode&0o010 != 0 || !c.Root() && !c.InGroup(n.Gid)) {
		mode &^= SetGID
	}
	return mode, nil
}

// Utimes decides whether c may set n's times: explicit times only the
// owner or root may set (EPERM); the current time (UTIME_NOW, utimes(f,
// NULL)) also anyone who may write n (EACCES otherwise).
func Utimes(c *Cred, n *Inode, explicit bool) error {
	if c.owns(n) {
		return nil
	}
	if explicit {
		return ErrNotPermitted
	}
	return Permission(c, n, Write)
}

// Truncate decides whether c may set the size of n, given it is a regular
// file: write permission.
func Truncate(c *Cred, n *Inode) error { return Permission(c, n, Write) }

// KillPriv returns the permission bits n keeps after c writes to it or
// truncates it (file_remove_privs): the setuid bit goes, and the setgid bit
// if the group may execute or c is not in n's group; root keeps both.
func KillPriv(c *Cred, n *Inode) uint32 {
	mode := n.Mode & 0o7777
	if c.Root() || !n.IsFile() {
		return mode
	}
	mode &^= SetUID
	if mode&SetGID != 0 && (mode&0o010 != 0 || !c.InGroup(n.Gid)) {
		mode &^= SetGID
	}
	return mode
}

// DropsPrivOnly reports whether changing n's bits to mode only clears its
// setuid and setgid bits: what a kernel sends on behalf of a writer that
// does not own the file (FUSE without handle_killpriv). Anyone who may
// write n may do that.
func DropsPrivOnly(n *Inode, mode uint32) bool {
	old := n.Mode & 0o7777
	mode &= 0o7777
	return mode != old && mode&^(SetUID|SetGID) == old&^(SetUID|SetGID) && mode&^old == 0
}

// New returns the group and permission bits of an inode c creates in
// directory dir with the requested bits mode (inode_init_owner): in a
// setgid directory the new inode takes the directory's group, and a new
// directory keeps the setgid bit; a setgid-executable file created there by
// a caller not in that group loses its setgid bit. Elsewhere the inode
// takes c's primary group.
func New(c *Cred, dir *Inode, mode uint32, isDir bool) (gid, perm uint32) {
	perm = mode & 0o7777
	if dir.Mode&SetGID == 0 {
		return c.Gid, perm
	}
	switch {
	case isDir:
		perm |= SetGID
	case perm&(SetGID|0o010) == SetGID|0o010 && !c.Root() && !c.InGroup(dir.Gid):
		perm &^= SetGID
	}
	return dir.Gid, perm
}
