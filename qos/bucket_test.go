package qos

import (
	"testing"
	"time"
)

// TestBucketTake: a full bucket covers its burst, then each take waits
// for what it is short of at the rate; refills stop at the burst; an
// unlimited bucket never waits.
func TestBucketTake(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	b := NewBucket(1000, 500, clock)
	for _, tc := range []struct {
		advance time.Duration
		take    int64
		want    time.Duration
	}{
		{0, 500, 0},                      // the burst
		{0, 100, 100 * time.Millisecond}, // 100 short at 1000/s
		{100 * time.Millisecond, 100, 100 * time.Millisecond},
		{time.Hour, 500, 0}, // refilled to the burst only
		{0, 1, time.Millisecond},
	} {
		now = now.Add(tc.advance)
		if got := b.Take(tc.take); got != tc.want {
			t.Errorf("after %v take %d: wait %v, want %v", tc.advance, tc.take, got, tc.want)
		}
	}
	b.SetRate(0, 0)
	if got := b.Take(1 << 40); got != 0 {
		t.Errorf("unlimited bucket: wait %v", got)
	}
}
