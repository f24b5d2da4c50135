package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/qos"
)

// BenchmarkQoSOverhead: client-library sequential write and read of 512
// MiB with the data servers' QoS scheduler on (one class, no limits) and
// off. The two clusters run one after the other, never at once: each
// writes its file once (a warm-up that does not count), then 15 pairs
// overwrite it in place and read it back, the order within a pair
// alternating. Overwriting in place keeps the page cache's allocation and
// freeing, and the MDS's collection of a truncated file's components, out
// of the figures. Each pair gives a ratio off/on of the elapsed times and
// the figure is the median pair (so a burst of load on the machine moves
// one pair, not the figure). The CPU this process spent per byte, off/on,
// is printed beside it: it is what the scheduler costs, and load moves it
// less than time (goal >= 0.95).
func BenchmarkQoSOverhead(b *testing.B) {
	size, pairs := int64(512<<20), 15
	if testing.Short() {
		size, pairs = 64<<20, 1
	}
	for i := 0; i < b.N; i++ {
		on := testcluster.Start(b, 4)
		off := testcluster.Start(b, 4, testcluster.WithDSConfig(func(c *ds.Config) { c.QoSOff = true }))
		p := qos.Policy{Classes: map[string]qos.ClassPolicy{"io": {Weight: 1}}}
		for d := 0; d < on.NumDS(); d++ {
			on.DS(d).SetQoSPolicy(p)
		}
		ctx := context.Background()
		buf := make([]byte, 64<<20)
		for j := range buf {
			buf[j] = byte(j*31 + j>>12)
		}
		type run struct{ write, read, wcpu, rcpu time.Duration }
		clusters := []struct {
			name string
			c    *client.Client
		}{{"on", newClient(b, on)}, {"off", newClient(b, off)}}
		for _, k := range clusters {
			if _, _, err := writeSeq(ctx, k.c, "/seq", "width=4,unit=1M,scheme=none", buf, size); err != nil {
				b.Fatal(err)
			}
		}
		var wr, rr, wc, rc []float64
		for pair := 0; pair < pairs; pair++ {
			clusters[0], clusters[1] = clusters[1], clusters[0] // alternate which goes first
			got := map[string]run{}
			for _, k := range clusters {
				var r run
				cpu0 := cpuTime()
				w, err := overwriteSeq(ctx, k.c, "/seq", buf, size)
				if err != nil {
					b.Fatal(err)
				}
				cpu1 := cpuTime()
				rd, err := readSeq(ctx, k.c, "/seq", buf, size)
				if err != nil {
					b.Fatal(err)
				}
				r.write, r.read, r.wcpu, r.rcpu = w, rd, cpu1-cpu0, cpuTime()-cpu1
				got[k.name] = r
			}
			wr = append(wr, got["off"].write.Seconds()/got["on"].write.Seconds())
			rr = append(rr, got["off"].read.Seconds()/got["on"].read.Seconds())
			wc = append(wc, got["off"].wcpu.Seconds()/got["on"].wcpu.Seconds())
			rc = append(rc, got["off"].rcpu.Seconds()/got["on"].rcpu.Seconds())
		}
		w, r := median(wr), median(rr)
		b.ReportMetric(w, "qos_write_ratio")
		b.ReportMetric(r, "qos_read_ratio")
		b.ReportMetric(median(wc), "qos_write_cpu_ratio")
		b.ReportMetric(median(rc), "qos_read_cpu_ratio")
		fmt.Printf("qos on/off, client-library sequential I/O of %d MiB, median of %d pairs: write %.3f, read %.3f (goal >= 0.95); CPU per byte off/on: write %.3f, read %.3f\n",
			size>>20, pairs, w, r, median(wc), median(rc))
		fmt.Printf("  pairs (off/on time): write %s, read %s\n", fmtRatios(wr), fmtRatios(rr))
	}
}

// overwriteSeq writes size bytes of buf over the start of the existing
// file name, in place, closes it (durable on every data server) and
// returns how long the writes took.
func overwriteSeq(ctx context.Context, c *client.Client, name string, buf []byte, size int64) (time.Duration, error) {
	f, err := c.OpenFile(ctx, name, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			_ = f.Close()
			return 0, err
		}
	}
	el := time.Since(start)
	return el, f.Close()
}

// median returns the median of xs (the mean of the middle two if even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtRatios formats xs for a log line.
func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}

// BenchmarkQoSIsolation: the isolation figure of the data servers' QoS
// schedulers, through the client library. Two data servers pace what
// they let through to qos_bandwidth (so that the schedulers, not the
// machine's load, are the bottleneck); the policy gives io weight 4 and
// drain weight 1, job 101 weight 2 and job 102 weight 1. A reader (job
// 200, io) asks for half the capacity; measured alone, then under two
// drains (jobs 101 and 102, closed-loop writers). It prints the reader's
// throughput under the drains / alone (goal >= 0.8) and the fairness
// error of the drains' shares against their weights, |(101/102) / 2 - 1|
// (goal <= 10%).
func BenchmarkQoSIsolation(b *testing.B) {
	const perDS = 32 << 20 // bytes per second each data server lets through
	window := 8 * time.Second
	if testing.Short() {
		window = 3 * time.Second
	}
	for i := 0; i < b.N; i++ {
		cl := testcluster.Start(b, 2, testcluster.WithDSConfig(func(c *ds.Config) { c.QoSBandwidth = perDS }))
		p := qos.DefaultPolicy()
		p.Classes["io"] = qos.ClassPolicy{Weight: 4}
		p.Classes["drain"] = qos.ClassPolicy{Weight: 1}
		p.Jobs = map[string]qos.JobPolicy{"101": {Weight: 2}, "102": {Weight: 1}}
		for d := 0; d < cl.NumDS(); d++ {
			cl.DS(d).SetQoSPolicy(p)
		}
		c := newClient(b, cl)
		ctx, cancel := context.WithCancel(context.Background())
		buf := make([]byte, 8<<20)
		if _, _, err := writeSeq(ctx, c, "/r", "width=2,unit=1M,scheme=none", buf, 64<<20); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		counts := map[string]*atomic.Int64{"200": {}, "101": {}, "102": {}}
		errs := make(chan error, 3)
		run := func(job string, fn func(ctx context.Context, n *atomic.Int64) error) context.CancelFunc {
			jctx, jcancel := context.WithCancel(ctx)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(jctx, counts[job]); err != nil && jctx.Err() == nil {
					errs <- fmt.Errorf("job %s: %w", job, err)
				}
			}()
			return jcancel
		}
		reader := func(ctx context.Context, n *atomic.Int64) error {
			return qosLoop(ctx, c, "/r", qos.Tag{Job: "200", Class: qos.ClassIO}, false, 2, perDS, n) // half of the two servers
		}
		drain := func(job string) func(ctx context.Context, n *atomic.Int64) error {
			return func(ctx context.Context, n *atomic.Int64) error {
				return qosLoop(ctx, c, "/d"+job, qos.Tag{Job: job, Class: qos.ClassDrain}, true, 16, 0, n)
			}
		}
		rate := func(jobs ...string) map[string]float64 {
			time.Sleep(time.Second) // the queues settle
			before := map[string]int64{}
			for _, j := range jobs {
				before[j] = counts[j].Load()
			}
			start := time.Now()
			time.Sleep(window)
			out := map[string]float64{}
			for _, j := range jobs {
				out[j] = float64(counts[j].Load()-before[j]) / time.Since(start).Seconds()
			}
			return out
		}
		stopReader := run("200", reader)
		solo := rate("200")["200"]
		stopReader()
		run("101", drain("101"))
		run("102", drain("102"))
		run("200", reader)
		mixed := rate("200", "101", "102")
		cancel()
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		isolation := mixed["200"] / solo
		fairness := math.Abs(mixed["101"]/mixed["102"]/2 - 1)
		b.ReportMetric(isolation, "reader_under_drains/alone")
		b.ReportMetric(100*fairness, "drain_fairness_error_%")
		fmt.Printf("qos isolation, 2 data servers at %d MiB/s each: reader alone %.1f MiB/s, under two drains %.1f (ratio %.3f, goal >= 0.8); drains %.1f and %.1f MiB/s at weights 2:1, fairness error %.1f%% (goal <= 10%%)\n",
			perDS>>20, solo/(1<<20), mixed["200"]/(1<<20), isolation, mixed["101"]/(1<<20), mixed["102"]/(1<<20), 100*fairness)
	}
}

// qosLoop reads (or, with write, writes) name in 1 MiB pieces over its
// first 32 MiB, round and round, from par handles at once (so that the
// job has requests queued at the servers), tagged with tag, at most rate
// bytes per second in all (0: as fast as the servers let it), counting
// the bytes in n, until ctx ends.
func qosLoop(ctx context.Context, c *client.Client, name string, tag qos.Tag, write bool, par int, rate float64, n *atomic.Int64) error {
	const piece, span = 1 << 20, 32 << 20
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR | os.O_CREATE
	}
	// The pace: each piece may start at next, which advances by
	// piece/rate; a reader held back by the servers catches up at most a
	// quarter of a second (a token bucket's burst), so that it asks for
	// rate, not for what it missed.
	var (
		mu   sync.Mutex
		next = time.Now()
	)
	wait := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		next = maxTime(next, now.Add(-time.Second/4)).Add(time.Duration(piece / rate * float64(time.Second)))
		return next.Sub(now)
	}
	errs := make(chan error, par)
	for w := 0; w < par; w++ {
		go func() {
			errs <- func() error {
				f, err := c.OpenFile(client.WithTag(ctx, tag), name, flag, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				buf := make([]byte, piece)
				for off := int64(w * piece); ctx.Err() == nil; off = (off + int64(par*piece)) % span {
					if rate > 0 {
						if ahead := wait(); ahead > 0 {
							select {
							case <-ctx.Done():
								return nil
							case <-time.After(ahead):
							}
						}
					}
					if write {
						_, err = f.WriteAt(buf, off) // straight to the data servers
					} else {
						_, err = f.ReadAt(buf, off)
					}
					if err != nil {
						return err
					}
					n.Add(piece)
				}
				return nil
			}()
		}()
	}
	var errAll error
	for w := 0; w < par; w++ {
		errAll = errors.Join(errAll, <-errs)
	}
	return errAll
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
