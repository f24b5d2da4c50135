package posix

import "slices"

// Cred is who asks: a uid, the primary gid and the supplementary groups.
// The MDS resolves Groups itself (NSS); they are never taken from the
// wire. A squashed root arrives here as the squash identity (nobody), not
// as uid 0.
type Cred struct {
	Uid    uint32
	Gid    uint32
	Groups []uint32
}

// Root reports whether the caller is root, which has every capability
// (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_FSETID, CAP_SYS_ADMIN).
func (c *Cred) Root() bool { return c.Uid == 0 }

// InGroup reports whether gid is the caller's primary or a supplementary
// group.
func (c *Cred) InGroup(gid uint32) bool {
	return c.Gid == gid || slices.Contains(c.Groups, gid)
}
