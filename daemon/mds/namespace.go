package mds

import (
	"math"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Limits of names and symbolic link targets, as Linux's NAME_MAX and
// PATH_MAX.
const (
	maxName   = 255
	maxTarget = 4096
)

// result is what Apply returns as the future's Response: the attributes of
// the inode a command made or changed, or the error that refused it.
type result struct {
	attr    rpc.Attr
	created bool
	err     error
}

func fail(err error) result { return result{err: err} }

// checkName refuses names that cannot be a directory entry.
func checkName(name string) error {
	switch {
	case name == "":
		return errf(syscall.EINVAL, "empty file name")
	case len(name) > maxName:
		return errf(syscall.ENAMETOOLONG, "name %q... is %d bytes, longer than %d", name[:32], len(name), maxName)
	case name == "." || name == "..":
		return errf(syscall.EINVAL, "%q cannot be created, removed or renamed", name)
	case strings.ContainsAny(name, "/\x00"):
		return errf(syscall.EINVAL, "name %q contains '/' or NUL", name)
	}
	return nil
}

// touch sets a directory's mtime and ctime after its entries changed.
func (st *state) touch(dir uint64, now int64) {
	d := st.w(dir)
	d.Mtime, d.Ctime = now, now
}

// newEntry checks that name can be added to directory parent.
func (st *state) newEntry(parent uint64, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	d, err := st.dir(parent)
	if err != nil {
		return err
	}
	if _, ok := d.Entries[name]; ok {
		return errf(syscall.EEXIST, "%q already exists in directory %d", name, parent)
	}
	return nil
}

// link adds the entry name -> n.Ino to directory parent.
func (st *state) link(parent uint64, name string, n *inode, now int64) {
	d := st.w(parent)
	d.Entries[name] = n.Ino
	d.Mtime, d.Ctime = now, now // touch, with the inode in hand
}

func (st *state) applyInit(c *initCmd) result {
	if r := st.get(rpc.RootIno); r.Ctime == 0 {
		r = st.w(rpc.RootIno)
		r.Atime, r.Mtime, r.Ctime = c.Now, c.Now, c.Now
	}
	return result{attr: st.get(rpc.RootIno).attr()}
}

func (st *state) applyCreate(c *createCmd) result {
	if err := checkName(c.Name); err != nil {
		return fail(err)
	}
	d, err := st.dir(c.Parent)
	if err != nil {
		return fail(err)
	}
	if ino, ok := d.Entries[c.Name]; ok {
		n := st.get(ino)
		switch {
		case c.Exclusive:
			return fail(errf(syscall.EEXIST, "%q already exists in directory %d", c.Name, c.Parent))
		case n.isDir():
			return fail(errf(syscall.EISDIR, "%q in directory %d is a directory", c.Name, c.Parent))
		case !n.isFile():
			return fail(errf(syscall.EEXIST, "%q in directory %d exists and is not a regular file", c.Name, c.Parent))
		}
		return result{attr: n.attr()}
	}
	if err := c.Layout.Validate(); err != nil {
		return fail(errf(syscall.EINVAL, "create %q: %v", c.Name, err))
	}
	lay := c.Layout
	lay.Generation = 1
	n := st.add(&inode{
		Project: st.projectOf(c.Parent),
		Mode:    rpc.TypeFile | c.Mode&0o7777,
		Uid:     c.Uid,
		Gid:     c.Gid,
		Nlink:   1,
		Atime:   c.Now, Mtime: c.Now, Ctime: c.Now,
		Layout: lay,
		Inline: c.Inline,
	})
	st.link(c.Parent, c.Name, n, c.Now)
	return result{attr: n.attr(), created: true}
}

func (st *state) applyMkdir(c *mkdirCmd) result {
	if err := st.newEntry(c.Parent, c.Name); err != nil {
		return fail(err)
	}
	n := st.add(&inode{
		Project: st.projectOf(c.Parent),
		Mode:    rpc.TypeDir | c.Mode&0o7777,
		Uid:     c.Uid,
		Gid:     c.Gid,
		Nlink:   2,
		Atime:   c.Now, Mtime: c.Now, Ctime: c.Now,
		Parent:  c.Parent,
		Entries: map[string]uint64{},
	})
	st.link(c.Parent, c.Name, n, c.Now)
	st.w(c.Parent).Nlink++
	return result{attr: n.attr(), created: true}
}

func (st *state) applySymlink(c *symlinkCmd) result {
	if err := st.newEntry(c.Parent, c.Name); err != nil {
		return fail(err)
	}
	switch {
	case c.Target == "":
		return fail(errf(syscall.ENOENT, "symlink %q: empty target", c.Name))
	case len(c.Target) > maxTarget:
		return fail(errf(syscall.ENAMETOOLONG, "symlink %q: target is %d bytes, longer than %d", c.Name, len(c.Target), maxTarget))
	}
	n := st.add(&inode{
		Project: st.projectOf(c.Parent),
		Mode:    rpc.TypeSymlink | 0o777,
		Uid:     c.Uid,
		Gid:     c.Gid,
		Nlink:   1,
		Size:    uint64(len(c.Target)),
		Atime:   c.Now, Mtime: c.Now, Ctime: c.Now,
		Target: c.Target,
	})
	st.link(c.Parent, c.Name, n, c.Now)
	return result{attr: n.attr(), created: true}
}

func (st *state) applyLink(c *linkCmd) result {
	n, err := st.node(c.Ino)
	if err != nil {
		return fail(err)
	}
	if err := st.newEntry(c.NewParent, c.NewName); err != nil {
		return fail(err)
	}
	if n.isDir() {
		return fail(errf(syscall.EPERM, "inode %d is a directory: no hard links to directories", c.Ino))
	}
	if n.Nlink == math.MaxUint32 {
		return fail(errf(syscall.EMLINK, "inode %d has too many links", c.Ino))
	}
	st.link(c.NewParent, c.NewName, n, c.Now)
	w := st.w(c.Ino)
	w.Nlink++
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applyUnlink(c *entryCmd) result {
	if err := checkName(c.Name); err != nil {
		return fail(err)
	}
	n, err := st.child(c.Parent, c.Name)
	if err != nil {
		return fail(err)
	}
	if n.isDir() {
		return fail(errf(syscall.EISDIR, "%q in directory %d is a directory: use rmdir", c.Name, c.Parent))
	}
	delete(st.w(c.Parent).Entries, c.Name)
	st.touch(c.Parent, c.Now)
	st.dropLink(n.Ino, c.Now)
	return result{}
}

func (st *state) applyRmdir(c *entryCmd) result {
	if err := checkName(c.Name); err != nil {
		return fail(err)
	}
	n, err := st.child(c.Parent, c.Name)
	if err != nil {
		return fail(err)
	}
	if !n.isDir() {
		return fail(errf(syscall.ENOTDIR, "%q in directory %d is not a directory", c.Name, c.Parent))
	}
	if len(n.Entries) != 0 {
		return fail(errf(syscall.ENOTEMPTY, "directory %q has %d entries", c.Name, len(n.Entries)))
	}
	st.removeDir(c.Parent, c.Name, n.Ino, c.Now)
	return result{}
}

// removeDir removes the empty directory ino, entry name of parent.
func (st *state) removeDir(parent uint64, name string, ino uint64, now int64) {
	p := st.w(parent)
	delete(p.Entries, name)
	p.Nlink--
	p.Mtime, p.Ctime = now, now
	st.noteTouch(ino)
	delete(st.inodes, ino)
}

// dropLink removes one link of a file or symbolic link; the last one frees
// the inode and queues its data for collection. An inline file's data is
// its inode's: its components were never written (spillInline writes them
// only to make the file leave the MDS, and cleans up after itself if the
// file went meanwhile), so it queues nothing and its removal costs no
// data server a call.
func (st *state) dropLink(ino uint64, now int64) {
	n := st.w(ino)
	n.Nlink--
	n.Ctime = now
	if n.Nlink > 0 {
		return
	}
	if n.onDS() && len(n.Layout.Targets) > 0 {
		st.orphans[orphanKey{Ino: ino, Gen: n.Layout.Generation}] = orphan{Ino: ino, Layout: n.Layout}
	}
	delete(st.inodes, ino)
	delete(st.locks, ino)
}

func (st *state) applyRename(c *renameCmd) result {
	for _, name := range []string{c.OldName, c.NewName} {
		if err := checkName(name); err != nil {
			return fail(err)
		}
	}
	if c.Flags&^(rpc.RenameNoReplace|rpc.RenameExchange) != 0 || c.Flags == rpc.RenameNoReplace|rpc.RenameExchange {
		return fail(errf(syscall.EINVAL, "rename %q: bad flags %#x", c.OldName, c.Flags))
	}
	src, err := st.child(c.OldParent, c.OldName)
	if err != nil {
		return fail(err)
	}
	nd, err := st.dir(c.NewParent)
	if err != nil {
		return fail(err)
	}
	dstIno, exists := nd.Entries[c.NewName]
	if c.Flags == rpc.RenameExchange {
		return st.exchange(c, src, dstIno, exists)
	}
	if exists && c.Flags == rpc.RenameNoReplace {
		return fail(errf(syscall.EEXIST, "rename %q: %q already exists in directory %d", c.OldName, c.NewName, c.NewParent))
	}
	if exists && dstIno == src.Ino {
		return result{} // the same entry, or two links of one file: nothing to do
	}
	var dst *inode
	if exists {
		dst = st.get(dstIno)
	}
	if src.isDir() {
		if st.isAncestor(src.Ino, c.NewParent) {
			return fail(errf(syscall.EINVAL, "rename %q: cannot move a directory into itself or its subdirectory", c.OldName))
		}
		if dst != nil && !dst.isDir() {
			return fail(errf(syscall.ENOTDIR, "rename %q: target %q is not a directory", c.OldName, c.NewName))
		}
		if dst != nil && len(dst.Entries) != 0 {
			return fail(errf(syscall.ENOTEMPTY, "rename %q: target directory %q is not empty", c.OldName, c.NewName))
		}
	} else if dst != nil && dst.isDir() {
		return fail(errf(syscall.EISDIR, "rename %q: target %q is a directory", c.OldName, c.NewName))
	}

	if dst != nil {
		if dst.isDir() {
			st.removeDir(c.NewParent, c.NewName, dst.Ino, c.Now)
		} else {
			delete(st.w(c.NewParent).Entries, c.NewName)
			st.dropLink(dst.Ino, c.Now)
		}
	}
	delete(st.w(c.OldParent).Entries, c.OldName)
	st.w(c.NewParent).Entries[c.NewName] = src.Ino
	if src.isDir() && c.OldParent != c.NewParent {
		st.w(src.Ino).Parent = c.NewParent
		st.w(c.OldParent).Nlink--
		st.w(c.NewParent).Nlink++
	}
	st.w(src.Ino).Ctime = c.Now
	st.touch(c.OldParent, c.Now)
	st.touch(c.NewParent, c.Now)
	return result{}
}

// exchange swaps two existing entries (RENAME_EXCHANGE).
func (st *state) exchange(c *renameCmd, src *inode, dstIno uint64, exists bool) result {
	if !exists {
		return fail(errf(syscall.ENOENT, "rename %q: exchange target %q not found in directory %d", c.OldName, c.NewName, c.NewParent))
	}
	if dstIno == src.Ino {
		return result{}
	}
	dst := st.get(dstIno)
	if (src.isDir() && st.isAncestor(src.Ino, c.NewParent)) || (dst.isDir() && st.isAncestor(dst.Ino, c.OldParent)) {
		return fail(errf(syscall.EINVAL, "rename %q: cannot exchange a directory with its own subdirectory", c.OldName))
	}
	st.w(c.OldParent).Entries[c.OldName] = dst.Ino
	st.w(c.NewParent).Entries[c.NewName] = src.Ino
	if c.OldParent != c.NewParent {
		if src.isDir() {
			st.w(src.Ino).Parent = c.NewParent
			st.w(c.OldParent).Nlink--
			st.w(c.NewParent).Nlink++
		}
		if dst.isDir() {
			st.w(dst.Ino).Parent = c.OldParent
			st.w(c.NewParent).Nlink--
			st.w(c.OldParent).Nlink++
		}
	}
	st.w(src.Ino).Ctime = c.Now
	st.w(dst.Ino).Ctime = c.Now
	st.touch(c.OldParent, c.Now)
	st.touch(c.NewParent, c.Now)
	return result{}
}
