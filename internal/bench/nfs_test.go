package bench

import (
	"context"
	"encoding/hex"
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
// the data servers' NFSv3 ports), against the same I/O through `strata
// mount` (the static strata command, FUSE) in the same guest, in the same
// boot: both clients pay the same software emulation (TCG), so their ratio
// is the primary figure. The same I/O through a Strata FUSE mount on the
// host is printed as absolute context.
//
// The file is STRATA_BENCH_NFS_MIB MiB (default 256; -short skips the
// benchmark, which boots a kernel). With -v the guest's console (a
// progress line every 20 s) and the bytes each NFS port got are printed
// as they come. The guest gives up after 5 minutes without progress
// (guest/progress.go: "stalled"); the whole run may take 10 minutes plus
// 10 s per MiB (53 minutes for 256 MiB; under 3 minutes at load 8), so run
// it with a go test -timeout above that (make bench does).
func BenchmarkNFS(b *testing.B) {
	size := 256
	if v := os.Getenv("STRATA_BENCH_NFS_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STRATA_BENCH_NFS_MIB=%q: want a positive number of MiB", v)
		}
		size = n
	}
	guestTime := 10*time.Minute + time.Duration(size)*10*time.Second
	g := nfstest.StrataGuest(b)
	for i := 0; i < b.N; i++ {
		rig := nfstest.StartPNFS(b, 3, testcluster.WithDefaultLayout("width=3,unit=1M,scheme=none"))
		ctx, cancel := context.WithTimeout(context.Background(), guestTime+time.Minute)
		// The guest's strata mount reaches the MDS and the data servers
		// at the loopback addresses they advertise (HostLoopback).
		o := rig.Options("4.2", "bigio", strconv.Itoa(size), "strata", rig.Cl.MDSAddr(), hex.EncodeToString(rig.Cl.Secret()))
		o.MemMiB = 768
		o.Timeout = guestTime
		o.HostLoopback = true
		stopWatch := func() {}
		if testing.Verbose() {
			// -v: the guest's console (its progress lines) and the
			// bytes each NFS port got, as they come.
			o.Console = os.Stdout
			stopWatch = watchPorts(rig, 20*time.Second)
		}
		res, err := g.Run(ctx, o)
		stopWatch()
		cancel()
		if err != nil || res.Has("FAIL") {
			var failed []string
			if res != nil {
				failed = res.Grep("FAIL")
			}
			b.Fatalf("the guest failed (%v) within its %v: %q\n%s", err, guestTime, failed, res.Console)
		}
		mib := float64(size << 20)
		var rate [4]float64 // kernel write, kernel read, guest strata write, guest strata read
		for j, key := range []string{"write_mib", "read_mib", "strata_write_mib", "strata_read_mib"} {
			s := benchSeconds(res, key)
			if s <= 0 {
				b.Fatalf("the guest printed no %s timing:\n%s", key, strings.Join(res.Lines, "\n"))
			}
			rate[j] = mib / s
		}
		nfsW, nfsR, gW, gR := rate[0], rate[1], rate[2], rate[3]

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
		b.ReportMetric(gW/1e6, "guest_mount_write_MB/s")
		b.ReportMetric(gR/1e6, "guest_mount_read_MB/s")
		b.ReportMetric(nfsW/gW, "write_ratio")
		b.ReportMetric(nfsR/gR, "read_ratio")
		fmt.Printf("\nNFSv4.2 pNFS flex files vs strata mount, both in one Linux 6.1 guest under qemu TCG, 3 DSes, width=3 unit=1M, %d MiB, 1 MiB calls:\n", size)
		fmt.Printf("                                   kernel pNFS    strata mount   ratio          strata mount on the host\n")
		fmt.Printf("                                   (guest)        (guest)                       (context, no emulation)\n")
		fmt.Printf("    write + fsync (MB/s)           %8.1f       %8.1f      %5.2f (goal >= 0.7)   %8.1f\n", nfsW/1e6, gW/1e6, nfsW/gW, fw/1e6)
		fmt.Printf("    read, caches dropped (MB/s)    %8.1f       %8.1f      %5.2f (goal >= 0.7)   %8.1f\n", nfsR/1e6, gR/1e6, nfsR/gR, fr/1e6)
		fmt.Printf("    bytes to the MDS's NFS port %d, to the data servers' NFS ports %v\n", rig.MDSPx.In(), rig.DSEach())
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

// watchPorts prints the bytes the guest sent to the MDS's and each data
// server's NFS port every period until the returned function is called.
func watchPorts(rig *nfstest.PNFS, period time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t0 := time.Now()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				fmt.Printf("HOST t=%.0fs bytes to the MDS's NFS port %d, to the data servers' %v\n", time.Since(t0).Seconds(), rig.MDSPx.In(), rig.DSEach())
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}
