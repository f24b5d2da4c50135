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
// to Config.FailoverTimeout — once some replica has answered; a client
// that reaches none fails at once. A call refused by a follower did nothing and
// is safe to repeat; a call whose reply was lost with its leader is
// repeated too, so a create may report EEXIST for a file it made itself
// (NFS without a reply cache behaves the same).
type mdsSet struct {
	mu    sync.Mutex
	addrs []string
	cur   int
	heard bool // some replica has answered: from then on, wait out elections
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

// answered records that a replica answered (even to refuse).
func (m *mdsSet) answered() {
	m.mu.Lock()
	m.heard = true
	m.mu.Unlock()
}

// gaveUp reports whether a client that never reached any replica has now
// tried them all: an unreachable namespace fails at once, it does not wait
// out a failover timeout.
func (m *mdsSet) gaveUp(attempt int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.heard && attempt+1 >= len(m.addrs)
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
	if _, ok := rpc.CredFrom(ctx); !ok {
		ctx = rpc.WithCred(ctx, c.self)
	}
	start := time.Now()
	backoff := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		addr := c.mdsSet.leader()
		err := c.rpc.Call(ctx, addr, method, req, resp)
		if err == nil {
			c.mdsSet.answered()
			return nil
		}
		var re *rpc.Error
		if errors.As(err, &re) {
			c.mdsSet.answered()
		}
		switch {
		case errors.As(err, &re) && re.NotLeader && re.Redirect != "" && re.Redirect != addr && attempt < 8:
			c.mdsSet.redirect(re.Redirect)
			continue
		case errors.As(err, &re) && re.NotLeader:
			c.mdsSet.next(addr)
		case errors.Is(err, rpc.ErrUnavailable):
			c.mdsSet.next(addr)
			if c.mdsSet.gaveUp(attempt) {
				return err
			}
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
