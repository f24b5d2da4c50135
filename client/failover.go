package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// mdsSet is the MDS replicas a client knows and the one it believes leads.
// Calls go to the leader; a follower's redirect moves them there, and an
// unreachable replica makes the client try the next, with backoff, for up
// to Config.FailoverTimeout. A call refused by a follower did nothing and
// is safe to repeat; a call whose reply was lost with its leader is
// repeated too, so a create may report EEXIST for a file it made itself
// (NFS without a reply cache behaves the same).
type mdsSet struct {
	mu    sync.Mutex
	addrs []string
	cur   int
}

func newMDSSet(list string) *mdsSet {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return &mdsSet{addrs: addrs}
}

func (m *mdsSet) leader() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addrs[m.cur]
}

// redirect makes addr the leader, adding it if it is new.
func (m *mdsSet) redirect(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, a := range m.addrs {
		if a == addr {
			m.cur = i
			return
		}
	}
	m.addrs = append(m.addrs, addr)
	m.cur = len(m.addrs) - 1
}

// next moves on from a replica that failed, if it is still the current one.
func (m *mdsSet) next(failed string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.addrs[m.cur] == failed {
		m.cur = (m.cur + 1) % len(m.addrs)
	}
}

// mds calls the MDS leader, following redirects and failing over.
func (c *Client) mds(ctx context.Context, method string, req, resp any) error {
	start := time.Now()
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		addr := c.mdsSet.leader()
		err := c.rpc.Call(ctx, addr, method, req, resp)
		if err == nil {
			return nil
		}
		var re *rpc.Error
		switch {
		case errors.As(err, &re) && re.NotLeader && re.Redirect != "" && re.Redirect != addr && attempt < 8:
			c.mdsSet.redirect(re.Redirect)
			continue
		case errors.As(err, &re) && re.NotLeader, errors.Is(err, rpc.ErrUnavailable):
			c.mdsSet.next(addr)
		default:
			return err
		}
		if time.Since(start) > c.cfg.FailoverTimeout {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}
