package qos

import (
	"context"
	"math"
	"sync"
	"time"
)

// Defaults of SchedulerConfig.
const (
	DefaultMaxInflight = 16
	DefaultMaxQueued   = 1024
)

// SchedulerConfig bounds a Scheduler.
type SchedulerConfig struct {
	// Capacity is the bytes a second the server serves at most; the
	// scheduler paces requests to it. Zero: unpaced, the scheduler orders
	// requests only when MaxInflight are in service.
	Capacity int64
	// MaxInflight is how many requests are served at once (default 16).
	MaxInflight int
	// MaxQueued is how many requests may wait; one more gets ErrBusy
	// (default 1024).
	MaxQueued int
	// Clock is time.Now if nil.
	Clock func() time.Time
}

// Scheduler shares a data server between classes, and within a class
// between jobs, by weighted fair queueing over bytes (start-time fair
// queueing, two levels): among the classes with work, the one with the
// smallest virtual time goes next and advances by bytes/weight; the same
// within the class between its jobs. A class under its reservation goes
// before all others; a class or job over its limit waits. It is
// work-conserving: a class alone gets the whole server. It is safe for
// concurrent use.
type Scheduler struct {
	cfg SchedulerConfig

	mu       sync.Mutex
	policy   Policy
	capacity pacer
	classes  [NumClasses]*classQueue
	vclock   float64 // virtual time of the last class served
	inflight int
	queued   int
	granted  int64 // requests granted, ever
	waited   int64 // nanoseconds they waited in the queue, summed
	timer    *time.Timer
	wakeAt   time.Time
	closed   bool
	done     chan struct{} // closed by Close
}

// NewScheduler returns a scheduler applying DefaultPolicy.
func NewScheduler(cfg SchedulerConfig) *Scheduler {
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Scheduler{cfg: cfg, done: make(chan struct{})}
	now := cfg.Clock()
	s.capacity.set(cfg.Capacity, now)
	for i := range s.classes {
		s.classes[i] = &classQueue{jobs: make(map[string]*jobQueue)}
	}
	s.SetPolicy(DefaultPolicy())
	return s
}

// SetPolicy applies p (already validated) to the requests that follow.
func (s *Scheduler) SetPolicy(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock()
	s.policy = p
	for i, c := range s.classes {
		cp := p.class(Class(i))
		c.weight = max(cp.Weight, 1e-6) // 0: only when nothing weighted waits
		c.limit.set(cp.Limit, now)
		c.resv.set(cp.Reservation, now)
		for id, j := range c.jobs {
			jp := p.job(id)
			j.weight = jp.Weight
			j.limit.set(jp.Limit, now)
		}
	}
	s.dispatch()
}

// Policy returns the policy in force.
func (s *Scheduler) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// Acquire waits until a request of n bytes for tag may be served and
// returns the function to call when it is done. It fails with ErrBusy at
// once if MaxQueued requests wait already, and with ctx's error if ctx
// ends first. A request of 0 bytes is not scheduled.
func (s *Scheduler) Acquire(ctx context.Context, tag Tag, n int64) (func(), error) {
	if n <= 0 || !tag.Class.Valid() {
		tag.Class = ClassIO
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if n <= 0 {
		s.mu.Unlock()
		return func() {}, nil
	}
	if s.queued >= s.cfg.MaxQueued {
		s.mu.Unlock()
		return nil, ErrBusy
	}
	w := &waiter{n: n, ready: make(chan struct{}), at: s.cfg.Clock()}
	s.enqueue(tag, w)
	s.dispatch()
	s.mu.Unlock()
	var err error
	select {
	case <-w.ready:
		return s.release, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.done:
		err = ErrClosed
	}
	s.mu.Lock()
	granted := w.granted
	if !granted {
		w.cancelled = true
		s.queued--
	}
	s.mu.Unlock()
	if granted {
		s.release()
	}
	return nil, err
}

func (s *Scheduler) release() {
	s.mu.Lock()
	s.inflight--
	s.dispatch()
	s.mu.Unlock()
}

// Close fails the requests that wait and every later Acquire.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// enqueue puts w at the tail of its job's queue; s.mu is held.
func (s *Scheduler) enqueue(tag Tag, w *waiter) {
	c := s.classes[tag.Class]
	j := c.jobs[tag.Job]
	if j == nil {
		jp := s.policy.job(tag.Job)
		j = &jobQueue{weight: jp.Weight}
		j.limit.set(jp.Limit, s.cfg.Clock())
		c.prune()
		c.jobs[tag.Job] = j
	}
	if len(j.waiters) == 0 {
		// A job or class that had nothing queued starts at the current
		// virtual time: idleness earns no credit.
		j.vt = max(j.vt, c.vclock)
		if c.backlog == 0 {
			c.vt = max(c.vt, s.vclock)
		}
	}
	j.waiters = append(j.waiters, w)
	c.requested += w.n
	j.requested += w.n
	c.backlog++
	s.queued++
}

// dispatch grants waiting requests while the server has room; s.mu is
// held. When only a limit or the capacity holds requests back, a timer
// calls it again when that clears.
func (s *Scheduler) dispatch() {
	for s.queued > 0 && s.inflight < s.cfg.MaxInflight && !s.closed {
		now := s.cfg.Clock()
		if d := s.capacity.wait(now); d > 0 {
			s.wake(now, d)
			return
		}
		c, j, d := s.pick(now)
		if c == nil {
			if d > 0 {
				s.wake(now, d)
			}
			return
		}
		w := j.waiters[0]
		j.waiters[0] = nil
		j.waiters = j.waiters[1:]
		c.backlog--
		s.queued--
		if w.cancelled {
			s.queued++ // counted already when it was cancelled
			continue
		}
		bytes := float64(w.n)
		s.vclock = c.vt
		c.vt += bytes / c.weight
		c.vclock = j.vt
		j.vt += bytes / max(j.weight, 1e-6)
		s.capacity.take(w.n)
		c.limit.take(w.n)
		c.resv.take(w.n)
		j.limit.take(w.n)
		c.served += w.n
		j.served += w.n
		s.granted++
		s.waited += int64(now.Sub(w.at))
		s.inflight++
		w.granted = true
		close(w.ready)
	}
}

// pick returns the class and job to serve next, or nil and how long until
// a limit lets one go (0: nothing waits); s.mu is held.
func (s *Scheduler) pick(now time.Time) (*classQueue, *jobQueue, time.Duration) {
	var best, reserved *classQueue
	var bestJob, reservedJob *jobQueue
	soonest := time.Duration(math.MaxInt64)
	for _, c := range s.classes {
		if c.backlog == 0 {
			continue
		}
		if d := c.limit.wait(now); d > 0 {
			soonest = min(soonest, d)
			continue
		}
		j, d := c.pick(now)
		if j == nil {
			soonest = min(soonest, d)
			continue
		}
		if c.resv.rate > 0 && c.resv.wait(now) == 0 && (reserved == nil || c.vt < reserved.vt) {
			reserved, reservedJob = c, j
		}
		if best == nil || c.vt < best.vt {
			best, bestJob = c, j
		}
	}
	if reserved != nil {
		return reserved, reservedJob, 0
	}
	if best != nil {
		return best, bestJob, 0
	}
	if soonest == time.Duration(math.MaxInt64) {
		soonest = 0
	}
	return nil, nil, soonest
}

// wake arranges for dispatch to run again in d; s.mu is held.
func (s *Scheduler) wake(now time.Time, d time.Duration) {
	at := now.Add(d)
	if s.timer != nil && !s.wakeAt.IsZero() && !s.wakeAt.After(at) {
		return // an earlier wake is pending
	}
	s.wakeAt = at
	if s.timer == nil {
		s.timer = time.AfterFunc(d, func() {
			s.mu.Lock()
			s.wakeAt = time.Time{}
			s.dispatch()
			s.mu.Unlock()
		})
		return
	}
	s.timer.Reset(d)
}

// classQueue is one class's jobs and accounts.
type classQueue struct {
	weight  float64
	vt      float64 // virtual finish time among classes
	vclock  float64 // virtual time of the last job served within the class
	limit   pacer
	resv    pacer
	backlog int // requests queued
	served  int64
	// requested is the bytes asked for (served, waiting or given up).
	requested int64
	jobs      map[string]*jobQueue
}

// pick returns the job of c to serve next or how long until one may go.
func (c *classQueue) pick(now time.Time) (*jobQueue, time.Duration) {
	var best *jobQueue
	soonest := time.Duration(math.MaxInt64)
	for _, j := range c.jobs {
		if len(j.waiters) == 0 {
			continue
		}
		if d := j.limit.wait(now); d > 0 {
			soonest = min(soonest, d)
			continue
		}
		if best == nil || j.vt < best.vt {
			best = j
		}
	}
	return best, soonest
}

// jobQueue is one job's waiting requests within a class.
type jobQueue struct {
	weight    float64
	vt        float64
	limit     pacer
	waiters   []*waiter
	served    int64
	requested int64
}

type waiter struct {
	n         int64
	at        time.Time // when it was queued
	ready     chan struct{}
	granted   bool
	cancelled bool
}

// pacer is a token bucket in debt form: a request takes its bytes whole,
// and the next waits until the debt is paid. Its burst is a quarter of a
// second: what a request held back (a late wake-up, a full server) may
// catch up. So a limit is exact over a long run, and over any window W it
// admits at most rate*W plus the burst and one request: a job held back
// just before a window measures up to 8% over its limit in 4 s, 3% in
// 10 s (TestSchedulerJobLimitWindow). It starts empty: no burst at start.
// A rate of zero is unlimited. Not safe for concurrent use.
type pacer struct {
	rate   float64
	tokens float64
	last   time.Time
}

func (p *pacer) set(rate int64, now time.Time) {
	p.refill(now)
	p.rate = float64(rate)
	p.tokens = min(p.tokens, p.burst())
}

func (p *pacer) burst() float64 { return p.rate / 4 }

func (p *pacer) refill(now time.Time) {
	if d := now.Sub(p.last); d > 0 && p.rate > 0 {
		p.tokens = min(p.burst(), p.tokens+d.Seconds()*p.rate)
	}
	p.last = now
}

// wait returns how long until the debt is paid (0: may go now).
func (p *pacer) wait(now time.Time) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	p.refill(now)
	if p.tokens >= 0 {
		return 0
	}
	return time.Duration(-p.tokens/p.rate*float64(time.Second)) + time.Millisecond
}

func (p *pacer) take(n int64) {
	if p.rate > 0 {
		p.tokens -= float64(n)
	}
}
