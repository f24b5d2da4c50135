package identity

import (
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"
)

// GroupResolver answers a uid's supplementary groups. The MDS resolves
// them itself (as NFS's manage-gids does); they are never taken from the
// wire.
type GroupResolver interface {
	Groups(uid uint32) []uint32
}

// groupsTTL is how long NSS answers are cached.
const groupsTTL = time.Minute

// NSS resolves groups through the host's name service (os/user: getpwuid
// and getgrouplist, or /etc/passwd and /etc/group), caching answers for a
// minute. A uid with no passwd entry has no supplementary groups. It is
// safe for concurrent use.
type NSS struct {
	Clock func() time.Time // nil: time.Now

	mu    sync.Mutex
	cache map[uint32]nssEntry
}

type nssEntry struct {
	gids []uint32
	at   time.Time
}

// Groups returns uid's groups (a fresh slice the caller may keep).
func (n *NSS) Groups(uid uint32) []uint32 {
	now := time.Now()
	if n.Clock != nil {
		now = n.Clock()
	}
	n.mu.Lock()
	e, ok := n.cache[uid]
	n.mu.Unlock()
	if ok && now.Sub(e.at) < groupsTTL {
		return slices.Clone(e.gids)
	}
	gids := lookupGroups(uid)
	n.mu.Lock()
	if n.cache == nil || len(n.cache) > 4096 {
		n.cache = map[uint32]nssEntry{}
	}
	n.cache[uid] = nssEntry{gids: gids, at: now}
	n.mu.Unlock()
	return slices.Clone(gids)
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
	var out []uint32
	for _, s := range ids {
		if g, err := strconv.ParseUint(s, 10, 32); err == nil {
			out = append(out, uint32(g))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
