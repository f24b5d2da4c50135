package posix

import "strings"

// Xattr decides whether c may read (write false) or set or remove (write
// true) the extended attribute name of n (xattr_permission and the
// capability checks): trusted.* is root's alone, hidden from others
// (ENODATA on read, EPERM on write); security.* anyone may read and only
// root may write; user.* needs read or write permission, exists only on
// regular files and directories, and in a sticky directory only its owner
// or root may write it.
func Xattr(c *Cred, n *Inode, name string, write bool) error {
	switch {
	case strings.HasPrefix(name, "trusted."):
		switch {
		case c.Root():
			return nil
		case write:
			return ErrNotPermitted
		}
		return ErrNoData
	case strings.HasPrefix(name, "security."):
		if write && !c.Root() {
			return ErrNotPermitted
		}
		return nil
	case strings.HasPrefix(name, "user."):
		if !n.IsFile() && !n.IsDir() {
			if write {
				return ErrNotPermitted
			}
			return ErrNoData
		}
		if write && n.IsDir() && n.Mode&Sticky != 0 && !c.owns(n) {
			return ErrNotPermitted
		}
		if write {
			return Permission(c, n, Write)
		}
		return Permission(c, n, Read)
	}
	return nil
}

// XattrVisible reports whether listxattr shows name to c: trusted.* only
// to root.
func XattrVisible(c *Cred, name string) bool {
	return c.Root() || !strings.HasPrefix(name, "trusted.")
}
