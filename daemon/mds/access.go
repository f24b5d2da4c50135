package mds

import (
	"context"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/internal/identity"
)

// mayRead reports whether the caller of ctx may read file ino: a writer
// that may not (a write-only file) gets a capability that does not read.
func (s *Server) mayRead(ctx context.Context, ino uint64) bool {
	c := s.caller(ctx)
	return s.check(func(st *state) error { return st.mayOpen(&c, ino, false, false) }) == nil
}

// caller returns who a request acts for: the identity the request proved
// (auth.go), with the supplementary groups the MDS resolved, never the
// wire's. With authentication off, the Cred the request claims; a request
// that names nobody acts as root.
func (s *Server) caller(ctx context.Context) posix.Cred {
	if id, ok := identity.FromContext(ctx); ok {
		return posix.Cred{Uid: id.Uid, Gid: id.Gid, Groups: id.Groups}
	}
	return s.claimedCaller(ctx)
}
