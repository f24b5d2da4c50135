package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// BenchmarkSmallFiles: the small-file figure of issue 16 (four processes
// create, write 4 KiB into and close small files, then, once the caches
// expired, open, read back (checked) and close every one) through a
// Strata mount with inline files off (threshold 0, every file's bytes on
// the data servers) and on (the default threshold: the bytes in the MDS),
// and through a go-fuse loopback mount of a local directory, in one run:
// three rounds, each running the three in turn, and the best of each, so
// that a loaded machine's swings meet all three alike. Beside the rates:
// the MDS calls per file, and where one file's time goes when one client
// library thread makes it, call by call (what the mount adds is the
// mount's figure less these).
func BenchmarkSmallFiles(b *testing.B) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		b.Skipf("SKIPPING SMALL FILES BENCHMARK: /dev/fuse is missing (%v)", err)
	}
	small, steps, rounds := 2500, 200, 3
	if testing.Short() {
		small, steps, rounds = 250, 50, 1
	}
	for i := 0; i < b.N; i++ {
		type run struct {
			name         string
			dir          string
			ops          func() map[string]int
			rate         float64 // the best round's
			writeCPU     time.Duration
			readCPU      time.Duration // the file system's side's CPU per file in the best round
			write, read  float64       // MDS calls per file
			steps        []stepTime
			inlineThresh int
			cl           *testcluster.Cluster
		}
		runs := []*run{{name: "strata, inline off", inlineThresh: 0}, {name: "strata, inline <= 64 KiB", inlineThresh: mds.DefaultInlineMax}}
		opts := fuse.DefaultOptions()
		wait := opts.AttrTimeout + opts.EntryTimeout + 100*time.Millisecond
		for _, r := range runs {
			cl := testcluster.Start(b, 4, testcluster.WithMDSConfig(func(c *mds.Config) { c.InlineMax = r.inlineThresh }))
			strata, err := fuse.Mount(context.Background(), cl.Client(), b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer unmountStrata(b, strata)
			r.dir, r.ops, r.cl = strata.Dir(), cl.MDSOps, cl
			r.steps = smallFileSteps(b, cl.Client(), steps, r.inlineThresh > 0)
		}
		loop := &run{name: "go-fuse loopback", dir: mountLoopback(b, opts)}
		for round := range rounds {
			for _, r := range append(runs, loop) {
				ph := smallFilesPhases(b, r.dir, small, wait, r.ops)
				if r.ops != nil && round == 0 {
					r.write, r.read = mountCalls(ph.before, ph.wrote, 4*small), mountCalls(ph.wrote, ph.read, 4*small)
				}
				if ph.rate > r.rate {
					r.rate, r.writeCPU, r.readCPU = ph.rate, ph.writeCPU, ph.readCPU
				}
			}
		}
		loopRate := loop.rate

		fmt.Printf("\nSmall files through the mount (4 procs x %d: create, write 4 KiB, close; reopen, read, close)\n", small)
		fmt.Printf("vs a go-fuse loopback mount (no passthrough), 1s caches, best of %d rounds:\n", rounds)
		fmt.Printf("  %-26s %9s %7s   %-26s   %s\n", "", "files/s", "ratio", "CPU us/file (write, read)", "MDS calls per file (write, read back)")
		for _, r := range runs {
			fmt.Printf("  %-26s %9.0f %7.2f   %12.0f, %-12.0f   %.2f, %.2f\n", r.name, r.rate, r.rate/loopRate, us(r.writeCPU), us(r.readCPU), r.write, r.read)
		}
		fmt.Printf("  %-26s %9.0f %7.2f   %12.0f, %-12.0f   (goal: inline >= 0.5)\n", "go-fuse loopback", loopRate, 1.0, us(loop.writeCPU), us(loop.readCPU))
		fmt.Printf("  (CPU: this process, the file system's side: the Strata mount with its MDS and data servers, or the loopback mount)\n")
		fmt.Printf("One file, one client library thread (%d files, mean ms per call):\n", steps)
		for _, r := range runs {
			fmt.Printf("  %s:\n", r.name)
			var total time.Duration
			for _, s := range r.steps {
				fmt.Printf("    %-58s %7.3f\n", s.what, ms(s.d))
				total += s.d
			}
			fmt.Printf("    %-58s %7.3f\n", "total", ms(total))
		}
		for _, r := range runs {
			fmt.Printf("The kernel's requests per small file through the mount (%s), the mount's time over each:\n", r.name)
			smallFileTrace(b, r.cl, steps, wait)
		}
		b.ReportMetric(runs[0].rate/loopRate, "small_off_ratio")
		b.ReportMetric(runs[1].rate/loopRate, "small_inline_ratio")
		b.ReportMetric(runs[1].rate, "small_inline_files/s")
		b.ReportMetric(float64(runs[1].writeCPU+runs[1].readCPU)/float64(loop.writeCPU+loop.readCPU), "small_inline_cpu_ratio")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// smallPhases is what smallFilesPhases measured: files per second of
// both phases together, the file system's side's CPU time per file of
// each, and (with ops set) the MDS's counters before the write phase,
// before the read back and after it.
type smallPhases struct {
	rate                float64
	writeCPU, readCPU   time.Duration
	before, wrote, read map[string]int
}

// smallFilesPhases runs the write and the read-back phases of four
// processes over n files each in dir. It removes the files.
func smallFilesPhases(b *testing.B, dir string, n int, wait time.Duration, ops func() map[string]int) smallPhases {
	root := filepath.Join(dir, "small")
	dirs, err := procDirs(root, 4)
	if err != nil {
		b.Fatal(err)
	}
	var out smallPhases
	if ops != nil {
		out.before = ops()
	}
	wrate, wcpu, err := runMetaPhase("write", dirs, n)
	if err != nil {
		b.Fatalf("%s: small files: %v", dir, err)
	}
	time.Sleep(wait)
	if ops != nil {
		out.wrote = ops()
	}
	rrate, rcpu, err := runMetaPhase("reread", dirs, n)
	if err != nil {
		b.Fatalf("%s: small files: %v", dir, err)
	}
	if ops != nil {
		out.read = ops()
	}
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	// Both phases over the same files: the rate of the two in turn.
	out.rate = 1 / (1/wrate + 1/rrate)
	out.writeCPU, out.readCPU = wcpu, rcpu
	return out
}

// stepTime is the mean time of one call of a small file's life.
type stepTime struct {
	what string
	d    time.Duration
}

// smallFileSteps times, call by call, what the mount asks of the client
// library for a small file: the create with its open (one MDS call), the
// 4 KiB write (to the data server, creating the component on its first
// write; or to the MDS, inline), the sync (the data server's fsync, then
// LAYOUTCOMMIT, one raft entry; nothing for an inline file), the close
// (LAYOUTRETURN), then the reopen (LAYOUTGET, with the bytes if inline),
// the read and the close. To tell a first write's component creation from
// the write, and the fsync from the commit, each file also gets a second
// write into the same component and a second LAYOUTCOMMIT.
func smallFileSteps(b *testing.B, c *client.Client, n int, inline bool) []stepTime {
	ctx := context.Background()
	dir, err := c.MkdirIno(ctx, rpc.RootIno, "steps", 0o755, c.Cred())
	if err != nil {
		b.Fatal(err)
	}
	names := []string{
		"create + open (mds.create.plus, raft)",
		"write 4 KiB (first write: DS component create + write)",
		"write 4 KiB more (same component: DS write only)",
		"sync (DS fsync + LAYOUTCOMMIT, raft)",
		"LAYOUTCOMMIT again (raft entry alone)",
		"close (LAYOUTRETURN)",
		"reopen (LAYOUTGET)",
		"read 8 KiB",
		"close",
	}
	if inline {
		names[1] = "write 4 KiB (mds.inline.write, raft)"
		names[2] = "write 4 KiB more (mds.inline.write, raft)"
		names[3] = "sync (nothing to commit)"
		names[6] = "reopen (LAYOUTGET with the bytes)"
		names[7] = "read 8 KiB (from the reply)"
	}
	sum := make([]time.Duration, len(names))
	data := make([]byte, smallFileSize)
	buf := make([]byte, 2*smallFileSize)
	for i := range n {
		var t [10]time.Time
		t[0] = time.Now()
		cr, err := c.CreateInoPlus(ctx, dir.Ino, "f"+strconv.Itoa(i), 0o644, c.Cred(), true, true)
		if err != nil || cr.File == nil {
			b.Fatalf("create: %v (file %v)", err, cr != nil && cr.File != nil)
		}
		f := cr.File
		t[1] = time.Now()
		if _, err := f.WriteAt(data, 0); err != nil {
			b.Fatal(err)
		}
		t[2] = time.Now()
		if _, err := f.WriteAt(data, smallFileSize); err != nil {
			b.Fatal(err)
		}
		t[3] = time.Now()
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		t[4] = time.Now()
		if _, err := c.LayoutCommitIno(ctx, f.Ino(), f.Layout().Generation, 2*smallFileSize, time.Now().UnixNano()); err != nil {
			b.Fatal(err)
		}
		t[5] = time.Now()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		t[6] = time.Now()
		g, _, err := c.OpenIno(ctx, cr.Attr.Ino, os.O_RDONLY)
		if err != nil {
			b.Fatal(err)
		}
		t[7] = time.Now()
		if k, err := g.ReadAt(buf, 0); k != len(buf) {
			b.Fatalf("read back %d bytes: %v", k, err)
		}
		t[8] = time.Now()
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
		t[9] = time.Now()
		for j := range sum {
			sum[j] += t[j+1].Sub(t[j])
		}
	}
	out := make([]stepTime, len(names))
	for j, s := range sum {
		out[j] = stepTime{what: names[j], d: s / time.Duration(n)}
	}
	return out
}
