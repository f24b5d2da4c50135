package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// BenchmarkNFS: sequential 1 MiB writes (then fsync) and reads (after
// dropping the guest's caches) of a 256 MiB file striped width=3,unit=1M,
// by the Linux 6.1 kernel client under qemu over pNFS flex files (data to
// the data servers' NFSv3 ports), against the same I/O through a Strata
// FUSE mount of the same cluster on the host, in the same run. The guest
// runs under software emulation (TCG), which the ratio includes.
//
// The file is STRATA_BENCH_NFS_MIB MiB (default 256; -short skips the
// benchmark, which boots a kernel). The guest may take 10 minutes plus 5 s per MiB (31 minutes for
// 256 MiB; about 15 were seen on a machine loaded 15 times its cores), so
// run it with a go test -timeout above that (make bench does).
func BenchmarkNFS(b *testing.B) {
	size := 256
	if v := os.Getenv("STRATA_BENCH_NFS_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STRATA_BENCH_NFS_MIB=%q: want a positive number of MiB", v)
		}
		size = n
	}
	guestTime := 10*time.Minute + time.Duration(size)*5*time.Second
	g := nfstest.Guest(b)
	for i := 0; i < b.N; i++ {
		rig := nfstest.StartPNFS(b, 3, testcluster.WithDefaultLayout("width=3,unit=1M,scheme=none"))
		ctx, cancel := context.WithTimeout(context.Background(), guestTime+time.Minute)
		o := rig.Options("4.2", "bigio", strconv.Itoa(size))
		o.MemMiB = 512
		o.Timeout = guestTime
		res, err := g.Run(ctx, o)
		cancel()
		if err != nil || res.Has("FAIL") {
			b.Fatalf("guest: %v\n%s", err, res.Console)
		}
		nw, nr := benchSeconds(res, "write_mib"), benchSeconds(res, "read_mib")
		if nw <= 0 || nr <= 0 {
			b.Fatalf("the guest printed no timings:\n%s", strings.Join(res.Lines, "\n"))
		}
		nfsW, nfsR := float64(size<<20)/nw, float64(size<<20)/nr

		m, err := fuse.Mount(context.Background(), rig.Cl.Client(), b.TempDir(), fuse.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		fw, fr, err := seqIO(m.Dir(), int64(size)<<20)
		unmountStrata(b, m)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(nfsW/1e6, "nfs_write_MB/s")
		b.ReportMetric(nfsR/1e6, "nfs_read_MB/s")
		b.ReportMetric(nfsW/fw, "write_ratio")
		b.ReportMetric(nfsR/fr, "read_ratio")
		fmt.Printf("\nNFSv4.2 pNFS flex files, Linux 6.1 under qemu TCG, 3 DSes, width=3 unit=1M, %d MiB, 1 MiB calls:\n", size)
		fmt.Printf("                                   kernel pNFS    strata mount   ratio\n")
		fmt.Printf("    write + fsync (MB/s)           %8.1f       %8.1f      %5.2f (goal >= 0.7)\n", nfsW/1e6, fw/1e6, nfsW/fw)
		fmt.Printf("    read, caches dropped (MB/s)    %8.1f       %8.1f      %5.2f (goal >= 0.7)\n", nfsR/1e6, fr/1e6, nfsR/fr)
		fmt.Printf("    bytes to the MDS port %d, to the data server ports %v\n", rig.MDSPx.In(), rig.DSEach())
	}
}

// benchSeconds returns the seconds of the guest's "BENCH key=N seconds=S" line.
func benchSeconds(res *nfsguest.Result, key string) float64 {
	for _, l := range res.Grep("BENCH " + key + "=") {
		if i := strings.Index(l, "seconds="); i >= 0 {
			v, _ := strconv.ParseFloat(l[i+len("seconds="):], 64)
			return v
		}
	}
	return 0
}
