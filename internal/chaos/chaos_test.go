package chaos

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestChaos runs the harness with a few fixed seeds (one with -short), or
// with STRATA_CHAOS_SEED alone to replay a failure. Each run prints its
// seed, the faults it injected and the bytes it verified.
func TestChaos(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	dur := 15 * time.Second
	if testing.Short() {
		seeds, dur = seeds[:1], 8*time.Second
	}
	if s := os.Getenv("STRATA_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRATA_CHAOS_SEED=%q: %v", s, err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			log := slog.New(slog.DiscardHandler)
			if os.Getenv("STRATA_TEST_LOG") != "" {
				log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Seed: seed, Dir: t.TempDir(), Duration: dur, Log: log, Logf: t.Logf})
			if rep != nil {
				t.Log("\n" + rep.String())
			}
			if err != nil {
				t.Fatalf("chaos seed %d (replay with STRATA_CHAOS_SEED=%d): %v", seed, seed, err)
			}
			if rep.Faulted() {
				t.Fatalf("chaos seed %d (replay with STRATA_CHAOS_SEED=%d): %d violations", seed, seed, len(rep.Violations))
			}
			if len(rep.Faults) == 0 || rep.Verified == 0 {
				t.Fatalf("chaos seed %d: %d faults, %d files verified: the run tested nothing", seed, len(rep.Faults), rep.Verified)
			}
		})
	}
}
