package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/qos"
)

// BenchmarkQoSOverhead: client-library sequential write and read with the
// data servers' QoS scheduler on (one class, no limits) and off, best of
// reps runs interleaved; the ratios on/off are the scheduler's cost
// (goal >= 0.95).
func BenchmarkQoSOverhead(b *testing.B) {
	size, reps := int64(256<<20), 5
	if testing.Short() {
		size, reps = 64<<20, 1
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
		type result struct{ write, read time.Duration }
		res := map[string]*result{"on": {write: time.Hour, read: time.Hour}, "off": {write: time.Hour, read: time.Hour}}
		clusters := []struct {
			name string
			cl   *testcluster.Cluster
		}{{"on", on}, {"off", off}}
		for rep := 0; rep < reps; rep++ {
			clusters[0], clusters[1] = clusters[1], clusters[0] // alternate which goes first
			for _, k := range clusters {
				c := newClient(b, k.cl)
				w, _, err := writeSeq(ctx, c, "/seq", "width=4,unit=1M,scheme=none", buf, size)
				if err != nil {
					b.Fatal(err)
				}
				r, err := readSeq(ctx, c, "/seq", buf, size)
				if err != nil {
					b.Fatal(err)
				}
				res[k.name].write, res[k.name].read = min(res[k.name].write, w), min(res[k.name].read, r)
			}
		}
		wr := res["off"].write.Seconds() / res["on"].write.Seconds()
		rr := res["off"].read.Seconds() / res["on"].read.Seconds()
		b.ReportMetric(gbps(size, res["on"].write), "qos_on_write_GB/s")
		b.ReportMetric(gbps(size, res["off"].write), "qos_off_write_GB/s")
		b.ReportMetric(gbps(size, res["on"].read), "qos_on_read_GB/s")
		b.ReportMetric(gbps(size, res["off"].read), "qos_off_read_GB/s")
		b.ReportMetric(wr, "qos_write_ratio")
		b.ReportMetric(rr, "qos_read_ratio")
		fmt.Printf("qos on/off, client-library sequential I/O of %d MiB, best of %d: write %.3f, read %.3f (goal >= 0.95)\n", size>>20, reps, wr, rr)
	}
}
