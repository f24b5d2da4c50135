package mds

import (
	"time"

	"github.com/strata-hpc/strata/internal/capability"
)

// adminTokenTTL is how long an admin token the MDS makes for itself (to
// remove components) stays valid.
const adminTokenTTL = time.Minute

// grant returns a capability for generation gen of file ino: read, or read
// and write, valid for Config.CapabilityTTL, signed with the cluster secret.
func (s *Server) grant(ino, gen uint64, write bool) capability.Token {
	ops := capability.OpRead
	if write {
		ops |= capability.OpWrite
	}
	t := capability.Token{
		Ino:    ino,
		Gen:    gen,
		Ops:    ops,
		Expiry: s.clock().Add(s.cfg.CapabilityTTL).UnixNano(),
	}
	t.Sign(s.cfg.Secret)
	return t
}

// adminToken returns a short-lived admin capability naming the component's
// file, for the MDS's own calls to data servers (removal of orphans).
func (s *Server) adminToken(ino, gen uint64) capability.Token {
	t := capability.Token{
		Ino:    ino,
		Gen:    gen,
		Ops:    capability.OpAdmin,
		Expiry: s.clock().Add(adminTokenTTL).UnixNano(),
	}
	t.Sign(s.cfg.Secret)
	return t
}
