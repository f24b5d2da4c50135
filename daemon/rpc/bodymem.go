package rpc

import (
	"context"
	"sync"
)

// bodyMemory is the budget of bytes that streamed request bodies may hold
// at once: a weighted semaphore whose waiters are served first come,
// first served, so a large body is not starved by a stream of small ones.
type bodyMemory struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	peak    int64
	waiters []*memWaiter
}

type memWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

func newBodyMemory(limit int64) *bodyMemory { return &bodyMemory{limit: limit} }

// acquire takes n bytes of the budget, waiting until they are free or ctx
// is done. n must not exceed the limit.
func (m *bodyMemory) acquire(ctx context.Context, n int64) error {
	m.mu.Lock()
	if len(m.waiters) == 0 && m.used+n <= m.limit {
		m.grant(n)
		m.mu.Unlock()
		return nil
	}
	w := &memWaiter{n: n, ready: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		m.used -= n
		m.wake()
	default:
		for i, o := range m.waiters {
			if o == w {
				m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
				break
			}
		}
		m.wake() // the head may have changed
	}
	return ctx.Err()
}

// release gives back n bytes.
func (m *bodyMemory) release(n int64) {
	m.mu.Lock()
	m.used -= n
	m.wake()
	m.mu.Unlock()
}

// grant records n bytes in use; m.mu is held.
func (m *bodyMemory) grant(n int64) {
	m.used += n
	m.peak = max(m.peak, m.used)
}

// wake grants waiters in order while the head fits; m.mu is held.
func (m *bodyMemory) wake() {
	for len(m.waiters) > 0 && m.used+m.waiters[0].n <= m.limit {
		w := m.waiters[0]
		m.waiters = m.waiters[1:]
		m.grant(w.n)
		close(w.ready)
	}
}

// stats returns the bytes in use and the most ever in use at once.
func (m *bodyMemory) stats() (used, peak int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.peak
}
