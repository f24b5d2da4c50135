package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrCoalescerClosed is returned by Coalescer.Do after Close.
var ErrCoalescerClosed = errors.New("rpc: coalescer closed")

// Coalescer merges independent calls made at the same time into batch
// calls, as a database's group commit does: a call goes out at once when
// fewer than inflight batches of its key are out, and otherwise waits and
// goes with every call queued meanwhile (at most max per batch) in the
// next one. Under load a batch call carries many items for one round
// trip; an idle coalescer adds no wait.
//
// Calls are grouped by key: items of one key must be sendable in one
// batch call, so the key names everything the call depends on besides
// the item (the server, the identity the call is made with). A batch is
// sent with the context of its first item without its cancellation (its
// values carry the identity); a caller whose context ends stops waiting,
// and its item, if already sent, may still take effect.
//
// The batch calls run on goroutines the Coalescer owns; Close waits for
// them. A Coalescer is safe for concurrent use.
type Coalescer[In, Out any] struct {
	send     func(ctx context.Context, items []In) ([]Out, error)
	max      int
	inflight int

	mu     sync.Mutex
	groups map[string]*coalesceGroup[In, Out]
	closed bool
	wg     sync.WaitGroup
}

type coalesceGroup[In, Out any] struct {
	queue   []*coalesced[In, Out]
	senders int
}

// coalesced is one item waiting for its batch's reply.
type coalesced[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{} // closed when out and err are set
}

// NewCoalescer returns a Coalescer whose batch calls are send(ctx, items),
// which must return one result per item, in order, or an error that fails
// all of them; items is valid only during the call. maxItems bounds the
// items of a batch, maxInflight the batch calls of one key at once (both
// at least 1).
func NewCoalescer[In, Out any](maxItems, maxInflight int, send func(ctx context.Context, items []In) ([]Out, error)) *Coalescer[In, Out] {
	return &Coalescer[In, Out]{
		send:     send,
		max:      max(maxItems, 1),
		inflight: max(maxInflight, 1),
		groups:   map[string]*coalesceGroup[In, Out]{},
	}
}

// Do sends in within a batch call of key and returns its result.
func (c *Coalescer[In, Out]) Do(ctx context.Context, key string, in In) (Out, error) {
	var zero Out
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	it := &coalesced[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zero, ErrCoalescerClosed
	}
	g := c.groups[key]
	if g == nil {
		g = &coalesceGroup[In, Out]{}
		c.groups[key] = g
	}
	g.queue = append(g.queue, it)
	if g.senders < c.inflight {
		g.senders++
		c.wg.Add(1)
		go c.run(key, g)
	}
	c.mu.Unlock()
	select {
	case <-it.done:
		return it.out, it.err
	case <-ctx.Done():
		c.forget(key, it)
		return zero, ctx.Err()
	}
}

// run sends batches of g until its queue is empty.
func (c *Coalescer[In, Out]) run(key string, g *coalesceGroup[In, Out]) {
	defer c.wg.Done()
	var items []In
	for {
		c.mu.Lock()
		n := min(len(g.queue), c.max)
		if n == 0 {
			g.senders--
			if g.senders == 0 && c.groups[key] == g {
				delete(c.groups, key)
			}
			c.mu.Unlock()
			return
		}
		batch := make([]*coalesced[In, Out], n)
		copy(batch, g.queue)
		g.queue = append(g.queue[:0], g.queue[n:]...)
		c.mu.Unlock()

		items = items[:0]
		for _, it := range batch {
			items = append(items, it.in)
		}
		outs, err := c.send(context.WithoutCancel(batch[0].ctx), items)
		if err == nil && len(outs) != len(batch) {
			err = fmt.Errorf("%w: %d results for a batch of %d", ErrDecode, len(outs), len(batch))
		}
		for i, it := range batch {
			if err != nil {
				it.err = err
			} else {
				it.out = outs[i]
			}
			close(it.done)
		}
	}
}

// forget takes it out of its queue if it is still waiting there.
func (c *Coalescer[In, Out]) forget(key string, it *coalesced[In, Out]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[key]; g != nil {
		for i, q := range g.queue {
			if q == it {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				return
			}
		}
	}
}

// Close refuses new calls and waits for the batch calls under way (and
// those of the calls already queued) to end.
func (c *Coalescer[In, Out]) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
}
