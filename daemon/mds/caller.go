package mds

import (
	"context"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// claimedCaller returns who a request claims to act for (authentication
// off: Config.NoAuth), with the supplementary groups this MDS resolves for
// the uid (NSS), never the wire's. A request that names nobody (a daemon's
// own call, an older client) acts as root.
func (s *Server) claimedCaller(ctx context.Context) posix.Cred {
	c, ok := rpc.CredFrom(ctx)
	if !ok {
		return posix.Cred{}
	}
	return posix.Cred{Uid: c.Uid, Gid: c.Gid, Groups: s.groups.of(c.Uid)}
}

// groupsTTL is how long a uid's resolved groups are kept: a user added to
// a group is seen by the MDS within this time, as by NFS's manage-gids
// cache.
const groupsTTL = 30 * time.Second

// groupCache resolves the supplementary groups of uids through NSS
// (os/user: getgrouplist with cgo, /etc/group without) and keeps them for
// groupsTTL. Safe for concurrent use.
type groupCache struct {
	clock func() time.Time

	mu sync.Mutex
	m  map[uint32]groupEntry
}

type groupEntry struct {
	gids []uint32
	at   time.Time
}

func newGroupCache(clock func() time.Time) *groupCache {
	return &groupCache{clock: clock, m: map[uint32]groupEntry{}}
}

// of returns uid's groups; a uid NSS does not know has none.
func (g *groupCache) of(uid uint32) []uint32 {
	if uid == 0 {
		return nil // root needs none: it has every capability
	}
	now := g.clock()
	g.mu.Lock()
	e, ok := g.m[uid]
	g.mu.Unlock()
	if ok && now.Sub(e.at) < groupsTTL {
		return e.gids
	}
	gids := lookupGroups(uid)
	g.mu.Lock()
	if len(g.m) > 4096 {
		clear(g.m) // bounded: a cache, not a registry
	}
	g.m[uid] = groupEntry{gids: gids, at: now}
	g.mu.Unlock()
	return gids
}

func lookupGroups(uid uint32) []uint32 {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil
	}
	gids := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			gids = append(gids, uint32(n))
		}
	}
	return gids
}
