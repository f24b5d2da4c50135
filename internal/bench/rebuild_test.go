package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/localcluster"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// BenchmarkRebuild: rebuild throughput of an idle cluster. 512 MiB of
// rs:4+2 files and 256 MiB of mirror:2 files (unit 1M) on 7 data servers;
// the data server holding the most components is stopped, and once it has
// been down for RebuildDelay the MDS rebuilds its components elsewhere
// (decoded from 4 of the 5 others for rs, copied from the other copy for
// mirror) with no rate limit. The rate is the bytes the rebuilds wrote
// over the time from the first byte to the last swap, as a ratio to the
// raw durable disk write rate (DiskWrite, 4 files, fsync) measured in the
// same run on the same disk. The default RebuildRate (128 MiB/s) throttles
// below what it shows. The data servers move the bytes between them (the
// target reads the survivors and decodes or copies): the MDS's process
// moves none, and the benchmark prints the count (mds.Server.DataBytes)
// and fails if it is not zero.
func BenchmarkRebuild(b *testing.B) {
	rsSize, mirSize := int64(512<<20), int64(256<<20)
	if testing.Short() {
		rsSize, mirSize = 64<<20, 32<<20
	}
	const files = 8
	for i := 0; i < b.N; i++ {
		cl := testcluster.Start(b, 7, testcluster.WithMDSConfig(func(c *mds.Config) {
			c.RebuildDelay = time.Second
			c.RebuildRate = -1
		}))
		_, diskSync, err := DiskWrite(cl.Dir(), rsSize/2, 4)
		if err != nil {
			b.Fatal(err)
		}
		c := cl.Client()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		buf := make([]byte, 16<<20)
		for j := range buf {
			buf[j] = byte(j*131 + j>>11)
		}
		var names []string
		held := map[string]int{} // components per data server
		for _, set := range []struct {
			spec string
			size int64
		}{{"unit=1M,scheme=rs:4+2", rsSize}, {"width=2,unit=1M,scheme=mirror:2", mirSize}} {
			for k := 0; k < files; k++ {
				name := fmt.Sprintf("/f%d", len(names))
				if err := writeFile(ctx, c, name, set.spec, buf, set.size/files); err != nil {
					b.Fatal(err)
				}
				info, err := c.GetLayout(ctx, name)
				if err != nil {
					b.Fatal(err)
				}
				for _, t := range info.Layout.Targets {
					held[t]++
				}
				names = append(names, name)
			}
		}
		ids := slices.Collect(func(yield func(string) bool) {
			for id := range held {
				if !yield(id) {
					return
				}
			}
		})
		slices.SortFunc(ids, func(a, b string) int { return held[b] - held[a] })
		victim := ids[0]
		for j := 0; j < cl.NumDS(); j++ {
			if localcluster.DSID(j) == victim {
				if err := cl.StopDS(j); err != nil {
					b.Fatal(err)
				}
			}
		}
		var first, last time.Time
		var cpu0, cpu1 time.Duration
		var bytes uint64
		for {
			st, err := c.RebuildStatus(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if st.BytesDone > 0 && first.IsZero() {
				first, cpu0 = time.Now(), processCPU()
			}
			if st.BytesDone > 0 && st.Queued+st.Running+st.Waiting+st.Blocked == 0 && healthy(ctx, c, names, victim) {
				last, cpu1, bytes = time.Now(), processCPU(), st.BytesDone
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("rebuild not done: %+v", st)
			}
			time.Sleep(20 * time.Millisecond)
		}
		moved := cl.MDS().DataBytes()
		if moved != 0 {
			b.Errorf("the MDS moved %d bytes of file data during the rebuild; want 0", moved)
		}
		el := last.Sub(first)
		rate := float64(bytes) / el.Seconds()
		ratio := rate / diskSync
		b.ReportMetric(rate/1e9, "rebuild_GB/s")
		b.ReportMetric(ratio, "rebuild_vs_disk")
		b.ReportMetric(float64(moved), "mds_data_bytes")
		cpuPerGiB := (cpu1 - cpu0).Seconds() / (float64(bytes) / (1 << 30))
		b.ReportMetric(cpuPerGiB, "rebuild_cpu_s/GiB")
		fmt.Printf("\nrebuild, idle cluster of 7 DSes on one disk, %d MiB rs:4+2 + %d MiB mirror:2 (unit 1M), %s stopped (%d components):\n", rsSize>>20, mirSize>>20, victim, held[victim])
		fmt.Printf("  raw disk write (4 files, fsync)  %7.1f MiB/s\n", diskSync/(1<<20))
		fmt.Printf("  rebuild, unthrottled             %7.1f MiB/s (%d MiB in %.2f s), ratio to disk %.2f\n", rate/(1<<20), bytes>>20, el.Seconds(), ratio)
		fmt.Printf("  CPU of the whole process         %7.2f s per GiB rebuilt (the load of the machine counts less in it than in the rate)\n", cpuPerGiB)
		fmt.Printf("  file data bytes through the MDS  %d\n", moved)
		fmt.Printf("  (an rs:4+2 component is decoded by its new data server from 4 others: it reads 4 bytes over loopback RPC for each it writes)\n")
		cancel()
	}
}

// writeFile creates name with spec and writes size bytes from buf.
func writeFile(ctx context.Context, c *client.Client, name, spec string, buf []byte, size int64) error {
	f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, spec)
	if err != nil {
		return err
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf[:min(int64(len(buf)), size-off)], off); err != nil {
			return err
		}
	}
	return f.Close()
}

// healthy reports whether no file has a stale component or one on avoid.
func healthy(ctx context.Context, c *client.Client, names []string, avoid string) bool {
	for _, n := range names {
		info, err := c.GetLayout(ctx, n)
		if err != nil || len(info.Stale) > 0 || slices.Contains(info.Layout.Targets, avoid) {
			return false
		}
	}
	return true
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
