package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/tiertest"
)

// BenchmarkTier measures job tiers on a real 4-node Slurm with the real
// SPANK plugin and agents (internal/tiertest):
//
//   - assembly: from the first node's prolog start to the last node's
//     ready mount (the end of its prolog; no stage-in), of a 4-node job;
//     median of 5 jobs (target <= 2 s);
//   - teardown: from the first epilog start to the last epilog end, no
//     drains (target <= 2 s), median of the same 5 jobs;
//   - drain throughput: a job writes files into its tier, copies them with
//     `cp -r` through a mount of the global namespace on the same node,
//     then moves them under its drain rule and waits for
//     `strata tier drain --wait`; the figure is the drain's bytes per
//     second as a ratio to cp -r's (target >= 1.0), same files, same two
//     places, same run.
func BenchmarkTier(b *testing.B) {
	files, size := 16, 16<<20
	if testing.Short() {
		files, size = 8, 4<<20
	}
	for range b.N {
		e := tiertest.Start(b, tiertest.Options{
			Nodes:     4,
			AgentArgs: "--drain-settle 100ms --scan-interval 50ms",
		})
		var assembly, teardown []float64
		for range 5 {
			id, err := e.Sbatch("-N4", "-o", "/dev/null", "--storage-tier=capacity=1G", "--wrap", "true")
			if err != nil {
				b.Fatal(err)
			}
			if job, err := e.Wait(id); err != nil || job.State != "COMPLETED" {
				b.Fatalf("job %d: %+v %v", id, job, err)
			}
			a, err := span(e, "prolog", id)
			if err != nil {
				b.Fatal(err)
			}
			t, err := span(e, "epilog", id)
			if err != nil {
				b.Fatal(err)
			}
			assembly, teardown = append(assembly, a.Seconds()), append(teardown, t.Seconds())
		}
		gdir := filepath.Join(e.Dir, "gmnt")
		unmount, err := e.MountGlobal("n1", gdir)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(e.Dir, "out"), 0o777); err != nil {
			b.Fatal(err)
		}
		script := filepath.Join(e.Dir, "out", "drainbench.sh")
		body := fmt.Sprintf(`#!/bin/bash
set -e
T=$STRATA_TIER_DIR
mkdir -p $T/src
for i in $(seq 1 %d); do head -c %d /dev/urandom > $T/src/f$i; done
sync
t0=$(date +%%s.%%N); cp -r $T/src %s/cp-copy; t1=$(date +%%s.%%N)
echo "cp $t0 $t1"
mv $T/src $T/ckpt
t2=$(date +%%s.%%N)
%s tier drain --wait --timeout 120s $T/ckpt/f* > /dev/null
t3=$(date +%%s.%%N)
echo "drain $t2 $t3"
`, files, size, gdir, e.Cluster.Strata)
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(e.Dir, "out", "drainbench.out")
		id, err := e.Sbatch("-N2", "-w", "n[1-2]", "-o", out, "--storage-tier=capacity=2G,drain=ckpt/*:strata:/drained", script)
		if err != nil {
			b.Fatal(err)
		}
		job, err := e.Wait(id)
		o, _ := os.ReadFile(out)
		unmount()
		if err != nil || job.State != "COMPLETED" {
			b.Fatalf("drain job %d: %+v %v\n%s", id, job, err, o)
		}
		cp, err1 := interval(string(o), "cp")
		dr, err2 := interval(string(o), "drain")
		if err1 != nil || err2 != nil {
			b.Fatalf("drain job output %q: %v %v", o, err1, err2)
		}
		total := float64(files * size)
		med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
		b.ReportMetric(med(assembly), "assembly_s")
		b.ReportMetric(med(teardown), "teardown_s")
		b.ReportMetric(total/dr/1e6, "drain_MB/s")
		b.ReportMetric(total/cp/1e6, "cp_MB/s")
		b.ReportMetric(cp/dr, "drain_ratio")
		fmt.Printf("tier: assembly on 4 nodes median %.2f s %v (target <= 2 s); teardown median %.2f s %v (target <= 2 s)\n",
			med(assembly), secs(assembly), med(teardown), secs(teardown))
		fmt.Printf("tier: drain of %d x %d MiB: %.0f MB/s, cp -r of the same files tier -> global mount: %.0f MB/s, ratio %.2f (target >= 1.0)\n",
			files, size>>20, total/dr/1e6, total/cp/1e6, cp/dr)
	}
}

// span is the time from the first node's hook start to the last node's
// hook end of job.
func span(e *tiertest.Env, op string, job uint32) (time.Duration, error) {
	var first, last time.Time
	for _, n := range e.Nodes {
		s, t, err := e.HookTimes(n, op, job)
		if err != nil {
			return 0, err
		}
		if first.IsZero() || s.Before(first) {
			first = s
		}
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(first), nil
}

// interval parses a line "NAME START END" (seconds) of a job's output.
func interval(out, name string) (float64, error) {
	m := regexp.MustCompile(`(?m)^` + name + ` ([0-9.]+) ([0-9.]+)$`).FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no %q line", name)
	}
	a, _ := strconv.ParseFloat(m[1], 64)
	z, _ := strconv.ParseFloat(m[2], 64)
	return z - a, nil
}

func secs(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.FormatFloat(x, 'f', 2, 64))
	}
	return "[" + strings.Join(s, " ") + "]"
}
