package bench

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// BenchmarkRedundancy: sequential write and read of 256 MiB through the
// client library in mirror:2 and rs:4+2 files, as ratios to a none file
// striped over the same 6 data servers in the same run (width 6, so every
// layout uses every server), and the read of the rs:4+2 file with the data
// server of one data column stopped, as a ratio to its healthy read.
func BenchmarkRedundancy(b *testing.B) {
	size, reps := int64(256<<20), 5
	if testing.Short() {
		size, reps = 64<<20, 1
	}
	for i := 0; i < b.N; i++ {
		cl := testcluster.Start(b, 6)
		c := cl.Client()
		ctx := context.Background()
		buf := make([]byte, 64<<20)
		for j := range buf {
			buf[j] = byte(j*31 + j>>12)
		}
		// Best of reps runs, interleaved, so that the ratios compare the
		// layouts under the same background (page cache writeback, other
		// processes on a shared machine); the reads start after the
		// written data is flushed, so that they do not race writeback.
		type result struct{ write, durable, read time.Duration }
		res := map[string]*result{}
		layouts := []struct{ name, spec string }{
			{"none", "width=6,unit=1M,scheme=none"},
			{"mirror:2", "unit=1M,scheme=mirror:2"}, // width 3, 6 copies
			{"rs:4+2", "unit=1M,scheme=rs:4+2"},
		}
		for rep := 0; rep < reps; rep++ {
			for _, l := range layouts {
				w, d, err := writeSeq(ctx, c, "/"+l.name, l.spec, buf, size)
				if err != nil {
					b.Fatal(err)
				}
				if r := res[l.name]; r == nil {
					res[l.name] = &result{write: w, durable: d}
				} else {
					r.write, r.durable = min(r.write, w), min(r.durable, d)
				}
			}
		}
		syscall.Sync()
		for rep := 0; rep < reps; rep++ {
			for _, l := range layouts {
				d, err := readSeq(ctx, c, "/"+l.name, buf, size)
				if err != nil {
					b.Fatal(err)
				}
				if r := res[l.name]; rep == 0 || d < r.read {
					r.read = d
				}
			}
		}
		info, err := c.GetLayout(ctx, "/rs:4+2")
		if err != nil {
			b.Fatal(err)
		}
		down := -1
		for j := 0; j < cl.NumDS(); j++ {
			if info.Layout.Targets[0] == fmt.Sprintf("ds%d", j+1) {
				down = j
			}
		}
		if err := cl.StopDS(down); err != nil {
			b.Fatal(err)
		}
		dc := newClient(b, cl) // a reader that starts after the failure
		var degraded time.Duration
		for rep := 0; rep < reps; rep++ {
			d, err := readSeq(ctx, dc, "/rs:4+2", buf, size)
			if err != nil {
				b.Fatal(err)
			}
			if rep == 0 || d < degraded {
				degraded = d
			}
		}

		g := func(d time.Duration) float64 { return gbps(size, d) }
		none := res["none"]
		b.ReportMetric(g(none.write), "none_write_GB/s")
		b.ReportMetric(g(none.read), "none_read_GB/s")
		fmt.Printf("\nredundancy, %d MiB sequential through the client library, 6 DSes on loopback, unit 1M, best of %d:\n", size>>20, reps)
		fmt.Printf("  baseline: none, width 6         write %6.2f GB/s  (+close %6.2f)  read %6.2f GB/s\n", g(none.write), g(none.durable), g(none.read))
		for _, l := range layouts[1:] {
			r := res[l.name]
			wr, rr := none.write.Seconds()/r.write.Seconds(), none.read.Seconds()/r.read.Seconds()
			target := map[string]string{"mirror:2": ">= 0.40, byte limit 0.50", "rs:4+2": ">= 0.55, byte limit 0.67"}[l.name]
			b.ReportMetric(wr, l.name+"_write_ratio")
			b.ReportMetric(rr, l.name+"_read_ratio")
			fmt.Printf("  %-8s write %6.2f GB/s ratio %.2f (target %s)  +close %6.2f GB/s\n", l.name, g(r.write), wr, target, g(r.durable))
			fmt.Printf("  %-8s read  %6.2f GB/s ratio %.2f (target >= 0.9)\n", l.name, g(r.read), rr)
		}
		healthy := res["rs:4+2"].read
		dr := healthy.Seconds() / degraded.Seconds()
		b.ReportMetric(dr, "rs_degraded_read_ratio")
		fmt.Printf("  rs:4+2   read with data column 0's DS down %6.2f GB/s, ratio to healthy %.2f (target >= 0.5)\n", g(degraded), dr)
	}
}

// writeSeq creates name with spec and writes size bytes from buf in
// len(buf) calls; it returns the time until the last write returned and
// until Close (fsync on every data server, LAYOUTCOMMIT) returned.
func writeSeq(ctx context.Context, c *client.Client, name, spec string, buf []byte, size int64) (written, durable time.Duration, err error) {
	f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, spec)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return 0, 0, err
		}
	}
	written = time.Since(start)
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	return written, time.Since(start), nil
}

// readSeq reads size bytes of name through a fresh open in len(buf) calls.
func readSeq(ctx context.Context, c *client.Client, name string, buf []byte, size int64) (time.Duration, error) {
	f, err := c.Open(ctx, name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.ReadAt(buf, off); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// newClient returns a client of cl with fresh connections.
func newClient(b *testing.B, cl *testcluster.Cluster) *client.Client {
	cfg := client.DefaultConfig()
	cfg.MDS = cl.MDSAddr()
	cfg.Auth = cl.Credentials()
	c, err := client.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}
