package mds

import (
	"context"
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Special files. mknod(2) makes a FIFO, a character or block device node
// or a UNIX socket: an inode with a type, permissions, owner, times and
// (device nodes) a device number, and no data. Strata stores nothing else
// for them: the kernel on the client opens FIFOs and device nodes and binds
// sockets itself, once the mount reports the inode's type. Their
// permissions, links, renames and removal are any file's.

// mknodCmd creates a special file. Mode holds the type bits and the
// permissions; Rdev is zero unless the type is a device node's.
type mknodCmd struct {
	Parent uint64
	Name   string
	Mode   uint32
	Rdev   uint32
	Uid    uint32
	Gid    uint32
	Now    int64
}

// checkSpecial refuses a mknod mode whose type is not a special file's,
// as Linux refuses an unknown type (a regular file is a create, a
// directory a mkdir).
func checkSpecial(name string, mode uint32) error {
	if err := checkMode(mode, func() string { return fmt.Sprintf("mknod %q", name) }); err != nil {
		return err
	}
	if !rpc.IsSpecial(mode) {
		return errf(syscall.EINVAL, "mknod %q: mode %#o is not a FIFO, device node or socket", name, mode)
	}
	return nil
}

func (c *mknodCmd) validate() error {
	if err := checkName(c.Name); err != nil {
		return err
	}
	if err := checkSpecial(c.Name, c.Mode); err != nil {
		return err
	}
	if c.Rdev != 0 && !rpc.IsDevice(c.Mode) {
		return errf(syscall.EINVAL, "mknod %q: a device number for a file that is not a device node", c.Name)
	}
	return nil
}

func (st *state) applyMknod(c *mknodCmd) result {
	if err := st.newEntry(c.Parent, c.Name); err != nil {
		return fail(err)
	}
	n := st.add(&inode{
		Project: st.projectOf(c.Parent),
		Mode:    c.Mode&rpc.TypeMask | c.Mode&0o7777,
		Uid:     c.Uid,
		Gid:     c.Gid,
		Nlink:   1,
		Atime:   c.Now, Mtime: c.Now, Ctime: c.Now,
		Rdev: c.Rdev,
	})
	st.link(c.Parent, c.Name, n, c.Now)
	return result{attr: n.attr(), created: true}
}

// mknod creates a special file. The name and type are checked first (EINVAL), then
// the directory (EACCES), as Linux; a device node is
// root's only (CAP_MKNOD); a device number given for a FIFO or socket is
// dropped, as Linux does.
func (s *Server) mknod(ctx context.Context, r *rpc.MknodReq) (*rpc.AttrResp, error) {
	if err := checkName(r.Name); err != nil {
		return nil, err
	}
	if err := checkSpecial(r.Name, r.Mode); err != nil {
		return nil, err
	}
	c, owner := s.creator(ctx, r.Cred)
	gid, bits, err := s.newInode(&c, &owner, r.Parent, r.Name, r.Mode&0o7777, false)
	if err != nil {
		return nil, err
	}
	if err := posix.Mknod(&c, r.Mode); err != nil {
		return nil, wrapDenied(err, "mknod %q in directory %d: device nodes are root's", r.Name, r.Parent)
	}
	rdev := r.Rdev
	if !rpc.IsDevice(r.Mode) {
		rdev = 0
	}
	res, err := s.apply(cmdMknod, &mknodCmd{
		Parent: r.Parent,
		Name:   r.Name,
		Mode:   r.Mode&rpc.TypeMask | bits,
		Rdev:   rdev,
		Uid:    owner.Uid,
		Gid:    gid,
		Now:    s.now(),
	})
	if err != nil {
		return nil, err
	}
	return &rpc.AttrResp{Attr: res.attr}, nil
}
