package mds

import (
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Validate before the log. Every limit a command is held to that does not
// depend on the namespace (name and target lengths, xattr names and sizes,
// modes, flag bits) is a validate method of the command. The leader runs
// it before the command is proposed (Server.apply), so that a refused
// request costs no raft log space, and the FSM runs it again before it
// applies the command (state.apply), so that an entry written by a leader
// that did not check (an older binary) is refused the same way on every
// replica. Limits that depend on the namespace (an xattr count, a quota)
// are checked by the leader against its own state before proposing
// (precheck) and again by the FSM, which alone decides.

// validator is a command with limits of its own.
type validator interface {
	validate() error
}

// checkMode refuses a mode that is not one: bits past the file type's.
// The type bits themselves are ignored, as chmod(2) and open(2) ignore
// them; the FSM keeps only the permission and set-id bits. what names the
// operation in the error; it is called only for one (creates validate
// twice each, and formatting every time showed in their profile).
func checkMode(mode uint32, what func() string) error {
	if mode&^0o177777 != 0 {
		return errf(syscall.EINVAL, "%s: mode %#o is not a file mode", what(), mode)
	}
	return nil
}

// checkTarget refuses a symbolic link target Linux would refuse.
func checkTarget(name, target string) error {
	switch {
	case target == "":
		return errf(syscall.ENOENT, "symlink %q: empty target", name)
	case len(target) > maxTarget:
		return errf(syscall.ENAMETOOLONG, "symlink %q: target is %d bytes, longer than %d", name, len(target), maxTarget)
	}
	for i := 0; i < len(target); i++ {
		if target[i] == 0 {
			return errf(syscall.EINVAL, "symlink %q: target contains NUL", name)
		}
	}
	return nil
}

func (c *createCmd) validate() error {
	if err := checkName(c.Name); err != nil {
		return err
	}
	return checkMode(c.Mode, func() string { return fmt.Sprintf("create %q", c.Name) })
}

func (c *mkdirCmd) validate() error {
	if err := checkName(c.Name); err != nil {
		return err
	}
	return checkMode(c.Mode, func() string { return fmt.Sprintf("mkdir %q", c.Name) })
}

func (c *symlinkCmd) validate() error {
	if err := checkName(c.Name); err != nil {
		return err
	}
	return checkTarget(c.Name, c.Target)
}

func (c *linkCmd) validate() error { return checkName(c.NewName) }

func (c *entryCmd) validate() error { return checkName(c.Name) }

func (c *renameCmd) validate() error {
	if err := checkName(c.OldName); err != nil {
		return err
	}
	if err := checkName(c.NewName); err != nil {
		return err
	}
	if c.Flags&^(rpc.RenameNoReplace|rpc.RenameExchange) != 0 || c.Flags == rpc.RenameNoReplace|rpc.RenameExchange {
		return errf(syscall.EINVAL, "rename %q: flags %#x", c.OldName, c.Flags)
	}
	return nil
}

func (c *setattrCmd) validate() error {
	const known = rpc.SetMode | rpc.SetUid | rpc.SetGid | rpc.SetSize | rpc.SetAtime | rpc.SetMtime
	if c.Req.Valid&^known != 0 {
		return errf(syscall.EINVAL, "setattr of inode %d: unknown attribute bits %#x", c.Req.Ino, c.Req.Valid&^known)
	}
	if c.Req.Valid&rpc.SetMode != 0 {
		return checkMode(c.Req.Mode, func() string { return fmt.Sprintf("chmod of inode %d", c.Req.Ino) })
	}
	return nil
}

// validate checks a set; a removal has no value and no flags.
func (c *xattrCmd) validate() error {
	if err := checkXattr(c.Name, c.Value); err != nil {
		return err
	}
	if c.Flags&^(rpc.XattrCreate|rpc.XattrReplace) != 0 || c.Flags == rpc.XattrCreate|rpc.XattrReplace {
		return errf(syscall.EINVAL, "xattr %q: flags %#x", c.Name, c.Flags)
	}
	return nil
}

// validateCommand runs payload's own checks, if it has any.
func validateCommand(payload any) error {
	if v, ok := payload.(validator); ok {
		return v.validate()
	}
	return nil
}

// precheck checks, against the leader's state, the limits of a command
// that depend on the namespace; the FSM checks them again and decides.
func (s *Server) precheck(t cmdType, payload any) error {
	s.fsm.mu.RLock()
	err := s.fsm.st.quotaCheck(payload)
	s.fsm.mu.RUnlock()
	if err != nil {
		return err
	}
	switch c := payload.(type) {
	case *xattrCmd:
		if t != cmdSetXattr || c.Name == rpc.LayoutXattr {
			return nil
		}
		s.fsm.mu.RLock()
		defer s.fsm.mu.RUnlock()
		n, err := s.fsm.st.node(c.Ino)
		if err != nil {
			return err
		}
		return xattrRoom(n, c.Name, c.Value)
	}
	return nil
}
