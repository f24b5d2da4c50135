package qos

import (
	"math"
	"testing"
	"time"
)

func TestRateFollowsACounter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r Rate
	v := int64(0)
	for i := 0; i <= 60; i++ { // 60 s at 100 MB/s, sampled every second
		r.Observe(t0.Add(time.Duration(i)*time.Second), v)
		v += 100e6
	}
	if got := r.PerSecond(); math.Abs(got-100e6) > 1e6 {
		t.Fatalf("steady 100 MB/s: rate %.0f", got)
	}
	// The owner restarts: its counter starts over; the rate keeps its
	// value rather than going negative or leaping.
	r.Observe(t0.Add(61*time.Second), 5)
	if got := r.PerSecond(); math.Abs(got-100e6) > 1e6 {
		t.Fatalf("after a counter reset: rate %.0f, want it kept", got)
	}
	// The counter stops growing: after 3 time constants the rate is under 5%.
	for i := 62; i <= 62+15; i++ {
		r.Observe(t0.Add(time.Duration(i)*time.Second), 5)
	}
	if got := r.PerSecond(); got > 5e6 {
		t.Fatalf("15 s idle: rate %.0f, want < 5%% of 100 MB/s", got)
	}
	// A sample that is not later than the last is ignored.
	before := r.PerSecond()
	r.Observe(t0.Add(10*time.Second), 1e12)
	if r.PerSecond() != before {
		t.Fatalf("an old sample changed the rate")
	}
}

func TestDrainETA(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		backlog uint64
		rate    float64
		want    time.Time
	}{
		{backlog: 1 << 30, rate: 1 << 28, want: now.Add(4 * time.Second)},
		{backlog: 0, rate: 1 << 28, want: time.Time{}},
		{backlog: 1 << 30, rate: 0, want: time.Time{}},
		{backlog: math.MaxUint64, rate: 1, want: time.Time{}},
	}
	for _, c := range cases {
		if got := DrainETA(now, c.backlog, c.rate); !got.Equal(c.want) {
			t.Errorf("DrainETA(%d B, %.0f B/s) = %v, want %v", c.backlog, c.rate, got, c.want)
		}
	}
	if got := BacklogDemand(10<<30, 10*time.Second); got != 1<<30 {
		t.Errorf("10 GiB over 10 s: %d B/s, want 1 GiB/s", got)
	}
	if got := BacklogDemand(0, time.Minute); got != 0 {
		t.Errorf("no backlog: %d B/s", got)
	}
}
