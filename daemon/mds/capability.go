package mds

import (
	"context"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/qos"
)

// adminTokenTTL is how long an admin token the MDS makes for itself (to
// remove components) stays valid.
const adminTokenTTL = time.Minute

// grant returns a capability for generation gen of file ino: read, write
// or both, valid for Config.CapabilityTTL, signed with the cluster
// secret, bound to the caller of ctx (a data server serves it only to that
// caller's credential).
func (s *Server) grant(ctx context.Context, ino, gen uint64, write, read bool, tag qos.Tag) capability.Token {
	var ops capability.Op
	if read {
		ops |= capability.OpRead
	}
	if write {
		ops |= capability.OpWrite
	}
	t := capability.Token{
		Ino:    ino,
		Gen:    gen,
		Ops:    ops,
		Expiry: s.clock().Add(s.cfg.CapabilityTTL).UnixNano(),
		Job:    tag.Job,
		Class:  uint8(tag.Class),
	}
	if id, ok := identity.FromContext(ctx); ok {
		t.Client = id.Principal
	}
	t.Sign(s.cfg.Secret)
	return t
}

// clientTag checks the QoS tag a client asks for at LAYOUTGET. A client
// may name the classes of its own work (io, stage, drain); the repair
// classes are the servers' own. The MDS cannot tell which Slurm job a
// process belongs to: the mount (root, trusted like the node) finds it in
// the caller's cgroup and the agent names its tier's job.
func clientTag(job string, class uint8) (qos.Tag, error) {
	c := qos.Class(class)
	switch c {
	case qos.ClassIO, qos.ClassStage, qos.ClassDrain:
	default:
		return qos.Tag{}, errf(syscall.EINVAL, "qos class %s is not one a client may ask for (io, stage, drain)", c)
	}
	if len(job) > qos.MaxJobIDLen {
		return qos.Tag{}, errf(syscall.EINVAL, "qos job id of %d bytes: at most %d", len(job), qos.MaxJobIDLen)
	}
	for _, r := range job {
		if r <= ' ' || r > '~' {
			return qos.Tag{}, errf(syscall.EINVAL, "qos job id %q: printable ASCII only", job)
		}
	}
	return qos.Tag{Job: job, Class: c}, nil
}

// adminToken returns a short-lived admin capability naming one component
// (column col of generation gen of file ino) on one data server, for the
// MDS's own calls to data servers (removal of orphans and strays, rebuild,
// with class the QoS class of the calls).
func (s *Server) adminToken(ino, gen uint64, col uint32, ds string, class uint8) capability.Token {
	return s.componentToken(capability.OpAdmin, ino, gen, col, ds, class)
}

// componentToken is adminToken with the operations ops: a data server
// rebuilding a component reads its sources with read-only ones.
func (s *Server) componentToken(ops capability.Op, ino, gen uint64, col uint32, ds string, class uint8) capability.Token {
	t := capability.Token{
		Ino:    ino,
		Gen:    gen,
		Ops:    ops,
		Class:  class,
		Expiry: s.clock().Add(adminTokenTTL).UnixNano(),
		Target: ds,
		Comp:   col + 1,
	}
	t.Sign(s.cfg.Secret)
	return t
}
