package qos

import (
	"math"
	"time"
)

// The bandwidth ledger's arithmetic (docs/qos.md, "The bandwidth
// ledger"): rates from counters that heartbeats and drain reports carry,
// and when a drain's backlog is drained at its rate. The MDS leader keeps
// the ledger (daemon/mds/ledger.go); this file only computes.

// RateTau is the time constant of a Rate: a step in a counter's growth
// shows at 63% after RateTau and at 95% after three.
const RateTau = 5 * time.Second

// Rate follows how fast a counter grows, in units per second: an
// exponentially weighted mean of its growth between samples, with time
// constant RateTau. A counter that goes down (its owner restarted) starts
// over from its new value without changing the rate. The zero Rate is
// ready to use; it is not safe for concurrent use.
type Rate struct {
	last int64
	at   time.Time
	perS float64
}

// Observe adds a sample: the counter was v at at. Samples at or before the
// last one are ignored.
func (r *Rate) Observe(at time.Time, v int64) {
	if r.at.IsZero() || v < r.last {
		r.last, r.at = v, at
		return
	}
	dt := at.Sub(r.at)
	if dt <= 0 {
		return
	}
	now := float64(v-r.last) / dt.Seconds()
	alpha := 1 - math.Exp(-dt.Seconds()/RateTau.Seconds())
	r.perS += alpha * (now - r.perS)
	r.last, r.at = v, at
}

// PerSecond is the rate, in units per second.
func (r *Rate) PerSecond() float64 { return r.perS }

// DrainETA is when a backlog of bytes is drained at rate bytes per second
// from now: the zero time when nothing is left or nothing drains.
func DrainETA(now time.Time, backlog uint64, rate float64) time.Time {
	if backlog == 0 || rate < 1 {
		return time.Time{}
	}
	secs := float64(backlog) / rate
	if secs > float64(math.MaxInt64/int64(time.Second)) {
		return time.Time{}
	}
	return now.Add(time.Duration(secs * float64(time.Second)))
}

// BacklogDemand is the bandwidth, in bytes per second, that drains a
// backlog within horizon (at least 1 for a backlog that is not empty).
func BacklogDemand(backlog uint64, horizon time.Duration) int64 {
	if backlog == 0 {
		return 0
	}
	if horizon < time.Second {
		horizon = time.Second
	}
	return max(int64(float64(backlog)/horizon.Seconds()), 1)
}
