package qos

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSchedulerJobLimitWindow drives the scheduler with a fake clock and
// no goroutines: a job limited to 1 MiB/s and an unlimited drain keep 12
// requests of 64 KiB queued at a server paced to 2 MiB/s, and dispatch
// runs at random intervals (a busy machine's late wake-ups). Over a 10 s
// window the limited job is admitted its limit, plus at most the pacer's
// burst (a quarter second of the limit) and one request: never more. The
// burst is reached when the job was held back just before the window
// (here: the server's two slots stay busy for half a second), and is what
// it catches up of the time it lost; over a long run it gets its limit.
func TestSchedulerJobLimitWindow(t *testing.T) {
	const (
		limit  = 1 << 20
		chunk  = 64 << 10
		window = 10 * time.Second
	)
	cases := []struct {
		late time.Duration // dispatch runs every 1 to 2*late
		held bool          // the server's slots stay busy from 0.5 s to 1 s
	}{{time.Millisecond, false}, {20 * time.Millisecond, false}, {time.Millisecond, true}, {20 * time.Millisecond, true}}
	for _, tc := range cases {
		late := tc.late
		now := time.Unix(1000, 0)
		s := NewScheduler(SchedulerConfig{Capacity: 2 * limit, MaxInflight: 2, Clock: func() time.Time { return now }})
		p := DefaultPolicy()
		p.Jobs = map[string]JobPolicy{"300": {Limit: limit}}
		s.SetPolicy(p)
		tags := []Tag{{Job: "300", Class: ClassIO}, {Job: "301", Class: ClassDrain}}
		queued := make([][]*waiter, len(tags))
		rng := rand.New(rand.NewPCG(1, uint64(late)))
		start := now
		var admitted int64
		s.mu.Lock()
		for now.Sub(start) < time.Second+window {
			now = now.Add(time.Duration(1 + rng.Int64N(int64(2*late))))
			if e := now.Sub(start); !tc.held || e < time.Second/2 || e >= time.Second {
				s.inflight = 0 // what was granted is served by now
			}
			for i, tag := range tags {
				for len(queued[i]) < 12 {
					w := &waiter{n: chunk, ready: make(chan struct{}), at: now}
					s.enqueue(tag, w)
					queued[i] = append(queued[i], w)
				}
			}
			s.dispatch()
			for i := range tags {
				var left []*waiter
				for _, w := range queued[i] {
					switch {
					case !w.granted:
						left = append(left, w)
					case i == 0 && now.Sub(start) >= time.Second:
						admitted += w.n
					}
				}
				queued[i] = left
			}
		}
		s.mu.Unlock()
		s.Close()
		want := float64(limit) * (now.Sub(start) - time.Second).Seconds()
		bound := want + limit/4 + chunk
		t.Logf("dispatch every ~%v, held before %v: admitted %.4f of the limit over %v (at most %.4f)", late, tc.held, float64(admitted)/want, window, bound/want)
		if float64(admitted) > bound || float64(admitted) < 0.99*want {
			t.Errorf("dispatch every ~%v, held before %v: job limited to %d B/s admitted %d B over %v, want %.0f (at most %.0f)", late, tc.held, limit, admitted, now.Sub(start)-time.Second, want, bound)
		}
	}
}
