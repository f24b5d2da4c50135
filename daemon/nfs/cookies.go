package nfs

import (
	"context"
	"strings"
	"sync"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// cookieTable maps READDIR cookies to the name they resume after (the MDS
// lists a directory by name), and directories to their parent (for
// LOOKUPP), both learned from what the server answered. Both are bounded;
// a forgotten cookie is NFS4ERR_BAD_COOKIE, a forgotten parent NOENT.
type cookieTable struct {
	mu      sync.Mutex
	max     int
	next    uint64
	names   map[uint64]cookieEntry
	order   []uint64
	parents map[uint64]uint64
	exports map[string]uint64
}

type cookieEntry struct {
	dir  uint64
	name string
}

func newCookieTable(max int) *cookieTable {
	return &cookieTable{max: max, next: 3, names: map[uint64]cookieEntry{}, parents: map[uint64]uint64{}, exports: map[string]uint64{}}
}

// add returns a cookie that resumes directory dir after name.
func (t *cookieTable) add(dir uint64, name string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	k := t.next
	t.names[k] = cookieEntry{dir, name}
	t.order = append(t.order, k)
	if len(t.order) > t.max {
		delete(t.names, t.order[0])
		t.order = t.order[1:]
	}
	return k
}

func (t *cookieTable) name(dir, cookie uint64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.names[cookie]
	return e.name, ok && e.dir == dir
}

func (t *cookieTable) setParent(dir, parent uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.parents) > 16*t.max {
		t.parents = map[uint64]uint64{}
	}
	t.parents[dir] = parent
}

func (t *cookieTable) parent(dir uint64) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.parents[dir]
	return p, ok
}

// exportIno resolves an export's path to its directory's inode.
func (s *Server) exportIno(ctx context.Context, path string) (uint64, error) {
	s.cookie.mu.Lock()
	ino, ok := s.cookie.exports[path]
	s.cookie.mu.Unlock()
	if ok {
		return ino, nil
	}
	ino = rpc.RootIno
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" {
			continue
		}
		e, err := s.cl.Lookup(ctx, ino, part)
		if err != nil {
			return 0, err
		}
		s.cookie.setParent(e.Ino, ino)
		ino = e.Ino
	}
	s.cookie.mu.Lock()
	s.cookie.exports[path] = ino
	s.cookie.mu.Unlock()
	return ino, nil
}
