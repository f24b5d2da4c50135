package posix

import "syscall"

// Access masks, as Linux's MAY_EXEC, MAY_WRITE and MAY_READ.
const (
	Exec  uint32 = 1
	Write uint32 = 2
	Read  uint32 = 4
)

// Mode bits beyond rwx.
const (
	SetUID   uint32 = syscall.S_ISUID
	SetGID   uint32 = syscall.S_ISGID
	Sticky   uint32 = syscall.S_ISVTX
	typeMask        = syscall.S_IFMT
)

// Inode is what a decision needs of an inode: its type and permission bits
// (Mode, as st_mode) and its owner.
type Inode struct {
	Mode uint32
	Uid  uint32
	Gid  uint32
}

// IsDir reports whether n is a directory.
func (n *Inode) IsDir() bool { return n.Mode&typeMask == syscall.S_IFDIR }

// IsFile reports whether n is a regular file.
func (n *Inode) IsFile() bool { return n.Mode&typeMask == syscall.S_IFREG }

// owns reports whether c owns n or is root (inode_owner_or_capable).
func (c *Cred) owns(n *Inode) bool { return c.Root() || c.Uid == n.Uid }

// Permission decides whether c may access n with mask (Read, Write, Exec
// or'ed), as Linux's generic_permission: the owner class if c owns n, else
// the group class if c is in n's group, else other; no fall-through from
// one class to the next. Root may read and write anything, search every
// directory, and execute a file that has an execute bit. It returns
// ErrDenied or nil.
func Permission(c *Cred, n *Inode, mask uint32) error {
	mode := n.Mode
	switch {
	case c.Uid == n.Uid:
		mode >>= 6
	case c.InGroup(n.Gid):
		mode >>= 3
	}
	if mask&^mode&7 == 0 {
		return nil
	}
	if c.Root() && (n.IsDir() || mask&Exec == 0 || n.Mode&0o111 != 0) {
		return nil
	}
	return ErrDenied
}

// Create decides whether c may add an entry to directory dir: write and
// search permission on it (may_create).
func Create(c *Cred, dir *Inode) error { return Permission(c, dir, Write|Exec) }

// Delete decides whether c may remove (or rename away, or replace) the
// entry for victim in directory dir (may_delete): write and search
// permission on dir, and in a sticky directory c must own victim or dir.
func Delete(c *Cred, dir, victim *Inode) error {
	if err := Permission(c, dir, Write|Exec); err != nil {
		return err
	}
	if dir.Mode&Sticky != 0 && !c.owns(victim) && c.Uid != dir.Uid {
		return ErrNotPermitted
	}
	return nil
}

// Link decides whether c may make a hard link to n, given that it may
// create in the target directory, as Linux with fs.protected_hardlinks=1
// (may_linkat): the owner and root may; others only to a regular file that
// is not setuid, not setgid-executable, and that they may read and write.
func Link(c *Cred, n *Inode) error {
	if c.owns(n) {
		return nil
	}
	if !n.IsFile() || n.Mode&SetUID != 0 || n.Mode&(SetGID|0o010) == SetGID|0o010 {
		return ErrNotPermitted
	}
	if Permission(c, n, Read|Write) != nil {
		return ErrNotPermitted
	}
	return nil
}

// Open decides whether c may open n for reading, writing or both
// (may_open). A directory opened for writing is EISDIR whoever asks.
func Open(c *Cred, n *Inode, read, write bool) error {
	var mask uint32
	if read {
		mask |= Read
	}
	if write {
		mask |= Write
		if n.IsDir() {
			return syscall.EISDIR
		}
	}
	return Permission(c, n, mask)
}

// Mknod decides whether c may create a special file of the type in mode
// (vfs_mknod): a device node needs CAP_MKNOD, which only root has here;
// FIFOs and sockets need nothing beyond Create on the directory.
func Mknod(c *Cred, mode uint32) error {
	switch mode & typeMask {
	case syscall.S_IFCHR, syscall.S_IFBLK:
		if !c.Root() {
			return ErrNotPermitted
		}
	}
	return nil
}
