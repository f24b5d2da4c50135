package qos

import (
	"context"
	"sync"
	"time"
)

// Bucket is a token bucket of bytes: Rate bytes a second flow in, at most
// Burst are kept. Wait takes n bytes and sleeps while the bucket is in
// debt, so a caller taking more than Burst at once still averages Rate.
// A rate of zero or less is unlimited. It is safe for concurrent use.
type Bucket struct {
	clock func() time.Time

	mu     sync.Mutex
	rate   float64 // bytes per second; <= 0: unlimited
	burst  float64
	tokens float64 // may be negative: debt
	last   time.Time
}

// NewBucket returns a full bucket of rate bytes a second holding at most
// burst bytes (burst <= 0: one second's worth). clock nil is time.Now.
func NewBucket(rate, burst int64, clock func() time.Time) *Bucket {
	if clock == nil {
		clock = time.Now
	}
	b := &Bucket{clock: clock, last: clock()}
	b.set(rate, burst)
	b.tokens = b.burst
	return b
}

func (b *Bucket) set(rate, burst int64) {
	b.rate = float64(rate)
	b.burst = float64(burst)
	if burst <= 0 {
		b.burst = max(float64(rate), 1)
	}
}

// SetRate changes the rate and burst; tokens held are kept, up to burst.
func (b *Bucket) SetRate(rate, burst int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.clock())
	b.set(rate, burst)
	b.tokens = min(b.tokens, b.burst)
}

// Rate returns the rate in bytes per second (<= 0: unlimited).
func (b *Bucket) Rate() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(b.rate)
}

// refill adds what flowed in since last; b.mu is held.
func (b *Bucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 && b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
	}
	b.last = now
}

// Take takes n bytes and returns how long the caller must wait before
// using them (zero if the bucket covered them).
func (b *Bucket) Take(n int64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return 0
	}
	b.refill(b.clock())
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// Wait takes n bytes and sleeps until the bucket has paid for them, or
// ctx ends (the bytes stay taken).
func (b *Bucket) Wait(ctx context.Context, n int64) error {
	d := b.Take(n)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
