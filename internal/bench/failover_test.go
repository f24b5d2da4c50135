package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// BenchmarkFailover: three MDS voters with the default (production) raft
// timeouts; the leader is killed five times, and each time the clock runs
// from the kill to the first create a client completes. Prints the median.
func BenchmarkFailover(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cl, err := localcluster.Start(ctx, localcluster.Options{
			Dir: b.TempDir(), DS: 2, MDS: 3, AdminAddr: "-", Log: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		cfg := client.DefaultConfig()
		cfg.MDS = cl.MDSAddr()
		cfg.Auth = cl.Credentials()
		c, err := client.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		create := func(name string) error {
			f, err := c.OpenFile(ctx, name, os.O_WRONLY|os.O_CREATE, 0o644)
			if err == nil {
				err = f.Close()
			}
			return err
		}
		if err := create("/warm"); err != nil {
			b.Fatal(err)
		}
		var times []time.Duration
		for round := 0; round < 5; round++ {
			leader := cl.Leader()
			start := time.Now()
			if err := cl.StopMDSReplica(leader); err != nil {
				b.Fatal(err)
			}
			if err := create(fmt.Sprintf("/after-kill-%d", round)); err != nil {
				b.Fatalf("round %d: create after killing the leader: %v", round, err)
			}
			times = append(times, time.Since(start))
			if err := cl.StartMDSReplica(ctx, leader); err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Second) // let it rejoin before the next kill
		}
		slices.Sort(times)
		med := times[len(times)/2]
		b.ReportMetric(med.Seconds(), "failover_s")
		fmt.Printf("\nMDS failover, 3 voters, default raft timeouts (500ms), leader killed 5 times:\n")
		fmt.Printf("  kill -> first successful create: median %.2f s (target <= 3 s); all: %v\n", med.Seconds(), times)
		c.Close()
		_ = cl.Close()
		cancel()
	}
}
