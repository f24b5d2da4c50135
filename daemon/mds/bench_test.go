package mds

import (
	"context"
	"testing"
)

// benchClients is the number of concurrent clients of every benchmark.
const benchClients = 64

func report(b *testing.B, op func(ctx context.Context, w int, seq int64) error) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	n, el, err := drive(context.Background(), benchClients, int64(b.N), 0, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/el.Seconds(), "ops/s")
}

func BenchmarkCreate64(b *testing.B) {
	bm, err := startBenchMDS(context.Background(), b.TempDir(), benchClients, true)
	if err != nil {
		b.Fatal(err)
	}
	defer bm.close()
	report(b, bm.create)
}

func BenchmarkStat64(b *testing.B) {
	ctx := context.Background()
	bm, err := startBenchMDS(ctx, b.TempDir(), benchClients, true)
	if err != nil {
		b.Fatal(err)
	}
	defer bm.close()
	if _, _, err := drive(ctx, benchClients, 64*64, 0, bm.create); err != nil {
		b.Fatal(err)
	}
	report(b, bm.stat)
}

func BenchmarkRaftApply64(b *testing.B) {
	rr, err := startBenchRaft(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer rr.close()
	report(b, rr.apply)
}

func BenchmarkFasthttpTiny64(b *testing.B) {
	hs, err := startBenchHTTP(benchClients)
	if err != nil {
		b.Fatal(err)
	}
	defer hs.close()
	report(b, hs.call)
}

// TestBenchMetadata runs the whole-system benchmark briefly, so that it
// keeps working; the figures are not checked (no timing assertions).
func TestBenchMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r, err := BenchMetadata(context.Background(), t.TempDir(), 8, 100e6)
	if err != nil {
		t.Fatal(err)
	}
	if r.CreatesPerSec <= 0 || r.SingleCreates <= 0 || r.StatsPerSec <= 0 || r.SingleStats <= 0 || r.RaftAppliesPerSec <= 0 || r.FasthttpPerSec <= 0 ||
		r.CreateCPU <= 0 || r.RaftCPU <= 0 || r.StatCPU <= 0 || r.FasthttpCPU <= 0 {
		t.Fatalf("bench: %s", r)
	}
	t.Log(r)
}
