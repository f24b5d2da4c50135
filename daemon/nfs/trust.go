package nfs

import (
	"net/netip"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// trust maps the AUTH_SYS identity of a call from addr the way Strata's
// identity layer maps its callers (Config.Nodemap, the MDS's trusted nodes
// and squash rules): a client on a trusted network acts for its uids; the
// first squash rule naming the client's network applies; and root from an
// untrusted network is squashed to nobody even where no rule names it.
// A squashed caller loses its supplementary groups. The export's own
// options (root_squash, all_squash) apply after this.
func (s *Server) trust(c rpc.Cred, gids []uint32, addr netip.Addr) (rpc.Cred, []uint32) {
	nm := &s.cfg.Nodemap
	id := identity.Identity{Uid: c.Uid, Gid: c.Gid}
	nm.Map(&id, addr)
	if !id.Squashed && id.Uid == 0 && len(nm.Trusted) > 0 && !nm.Trusts(addr) {
		id.Uid, id.Gid, id.Squashed = identity.NobodyID, identity.NobodyID, true
	}
	if id.Squashed {
		return rpc.Cred{Uid: id.Uid, Gid: id.Gid}, nil
	}
	return c, gids
}
