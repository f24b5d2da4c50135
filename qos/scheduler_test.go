package qos

import (
	"context"
	"errors"
	"testing"
	"time"
)

// grantOrder holds the scheduler's only slot, queues the requests of
// tags (count each), then frees the slot one grant at a time and returns
// which tag each of the first n grants went to.
func grantOrder(t *testing.T, s *Scheduler, tags map[Tag]int, n int) map[Tag]int {
	t.Helper()
	ctx := context.Background()
	hold, err := s.Acquire(ctx, Tag{Class: ClassIO}, 1)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		tag     Tag
		release func()
	}
	grants := make(chan grant, 1024)
	total := 0
	for tag, k := range tags {
		total += k
		for range k {
			go func() {
				rel, err := s.Acquire(ctx, tag, 1000)
				if err != nil {
					t.Error(err)
					return
				}
				grants <- grant{tag, rel}
			}()
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.Stats().Queued < total {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests queued", s.Stats().Queued, total)
		}
		time.Sleep(time.Millisecond)
	}
	got := map[Tag]int{}
	hold()
	for i := range total {
		g := <-grants
		if i < n {
			got[g.tag]++
		}
		g.release()
	}
	return got
}

func TestSchedulerWeights(t *testing.T) {
	s := NewScheduler(SchedulerConfig{MaxInflight: 1})
	defer s.Close()
	p := DefaultPolicy()
	p.Classes["io"] = ClassPolicy{Weight: 3}
	p.Classes["drain"] = ClassPolicy{Weight: 1}
	p.Jobs = map[string]JobPolicy{"a": {Weight: 2}, "b": {Weight: 1}}
	s.SetPolicy(p)
	reader, da, db := Tag{Job: "r", Class: ClassIO}, Tag{Job: "a", Class: ClassDrain}, Tag{Job: "b", Class: ClassDrain}
	got := grantOrder(t, s, map[Tag]int{reader: 60, da: 40, db: 40}, 80)
	// io gets 3/4 of the first 80 grants; the drains share the rest 2:1.
	if got[reader] < 58 || got[reader] > 62 || got[da] < 12 || got[da] > 14 || got[db] < 6 || got[db] > 8 {
		t.Fatalf("grants %v, want reader 60, a 13, b 7", got)
	}
}

func TestSchedulerWorkConserving(t *testing.T) {
	s := NewScheduler(SchedulerConfig{MaxInflight: 1})
	defer s.Close()
	// The drain class alone gets every grant although io weighs more.
	got := grantOrder(t, s, map[Tag]int{{Job: "a", Class: ClassDrain}: 20}, 20)
	if got[Tag{Job: "a", Class: ClassDrain}] != 20 {
		t.Fatalf("grants %v", got)
	}
}

func TestSchedulerReservation(t *testing.T) {
	s := NewScheduler(SchedulerConfig{MaxInflight: 1})
	defer s.Close()
	p := DefaultPolicy()
	p.Classes["io"] = ClassPolicy{Weight: 1000}
	p.Classes["rebuild"] = ClassPolicy{Weight: 1, Reservation: 1 << 40}
	s.SetPolicy(p)
	// A rebuild under its reservation goes first whatever the weights.
	got := grantOrder(t, s, map[Tag]int{{Class: ClassIO}: 20, {Class: ClassRebuild}: 10}, 10)
	if got[Tag{Class: ClassRebuild}] != 10 {
		t.Fatalf("grants %v, want the 10 rebuild requests first", got)
	}
}

func TestSchedulerBusy(t *testing.T) {
	s := NewScheduler(SchedulerConfig{MaxInflight: 1, MaxQueued: 2})
	defer s.Close()
	ctx := context.Background()
	hold, err := s.Acquire(ctx, Tag{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	for range 2 {
		go func() { _, err := s.Acquire(cctx, Tag{}, 10); done <- err }()
	}
	for s.Stats().Queued < 2 {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Acquire(ctx, Tag{}, 10); !errors.Is(err, ErrBusy) {
		t.Fatalf("third waiter: %v, want ErrBusy", err)
	}
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v", err)
		}
	}
	hold()
	rel, err := s.Acquire(ctx, Tag{}, 10)
	if err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
	rel()
}
