package rpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// queued returns how many items wait in key's queue.
func (c *Coalescer[In, Out]) queued(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[key]; g != nil {
		return len(g.queue)
	}
	return 0
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalescer: calls made while a batch of their key is out go together
// in the next batch, each caller gets its own item's result, a failed
// batch fails its items only, other keys are not held up, a caller whose
// context ends stops waiting, and Close waits for the batches under way.
func TestCoalescer(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	send := func(ctx context.Context, items []int) ([]string, error) {
		mu.Lock()
		batches = append(batches, append([]int(nil), items...))
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release // hold the first batch out while others queue
		}
		out := make([]string, len(items))
		for i, v := range items {
			if v < 0 {
				return nil, fmt.Errorf("negative item %d", v)
			}
			out[i] = fmt.Sprint("r", v)
		}
		return out, nil
	}
	c := NewCoalescer(4, 1, send)
	ctx := context.Background()

	results := make([]string, 7)
	errs := make([]error, 7)
	var wg sync.WaitGroup
	call := func(i int) {
		defer wg.Done()
		results[i], errs[i] = c.Do(ctx, "k", i)
	}
	wg.Add(1)
	go call(0)
	waitFor(t, "the first batch to go out", func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	for i := 1; i < 7; i++ {
		wg.Add(1)
		go call(i)
	}
	waitFor(t, "six calls to queue behind the first batch", func() bool { return c.queued("k") == 6 })

	// Another key has its own batches: not held up by "k".
	if r, err := c.Do(ctx, "other", 100); err != nil || r != "r100" {
		t.Fatalf("call of another key while k's batch is out: %q, %v", r, err)
	}
	// A caller whose context ends stops waiting and leaves the queue.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Do(cctx, "k", 99); done <- err }()
	waitFor(t, "the call to be cancelled to queue", func() bool { return c.queued("k") == 7 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if n := c.queued("k"); n != 6 {
		t.Fatalf("%d queued after the cancelled call left, want 6", n)
	}

	close(release)
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i] != fmt.Sprint("r", i) {
			t.Errorf("call %d: %q, %v", i, results[i], errs[i])
		}
	}
	mu.Lock()
	for _, b := range batches {
		slices.Sort(b)
	}
	got := fmt.Sprint(batches)
	mu.Unlock()
	// The first batch alone; "other"'s; then the six queued calls, in the
	// order they queued, in batches of at most 4.
	if !strings.HasPrefix(got, "[[0] [100] [") || len(batches) != 4 || len(batches[2]) != 4 || len(batches[3]) != 2 {
		t.Errorf("batches %s, want [0], [100], then 1 to 6 in a batch of 4 and one of 2", got)
	}
	seen := map[int]bool{}
	for _, b := range batches[2:] {
		for _, v := range b {
			seen[v] = true
		}
	}
	if len(seen) != 6 || seen[0] || seen[99] {
		t.Errorf("batches %s, want the six queued calls once each", got)
	}

	// A failed batch fails its items with its error.
	if _, err := c.Do(ctx, "k", -1); err == nil {
		t.Error("item of a failed batch: no error")
	}
	c.Close()
	if _, err := c.Do(ctx, "k", 1); !errors.Is(err, ErrCoalescerClosed) {
		t.Errorf("call after Close: %v, want ErrCoalescerClosed", err)
	}
}
