package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const gib = 1 << 30

func gbps(bytes int64, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e9 }

// allocated returns the bytes this process has allocated on the heap so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// BenchmarkDataPath: sequential write and read of 1 GiB through the client
// library, striped over 4 data servers on loopback, against a raw
// 4-connection loopback TCP transfer of the same bytes in the same run.
func BenchmarkDataPath(b *testing.B) {
	size := int64(gib)
	if testing.Short() {
		size = 64 << 20
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cpu0 := processCPU()
		raw, err := LoopbackTCP(size, 4)
		if err != nil {
			b.Fatal(err)
		}
		rawCPU := processCPU() - cpu0
		cl := testcluster.Start(b, 4)
		diskBuf, diskSync, err := DiskWrite(cl.Dir(), size, 4)
		if err != nil {
			b.Fatal(err)
		}
		c := cl.Client()
		ctx := context.Background()
		buf := make([]byte, 64<<20)
		for j := range buf {
			buf[j] = byte(j*31 + j>>12)
		}
		f, err := c.OpenFileLayout(ctx, "/bench", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, "width=4,unit=1M")
		if err != nil {
			b.Fatal(err)
		}
		alloc0 := allocated()
		cpu0 = processCPU()
		start := time.Now()
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := f.WriteAt(buf, off); err != nil {
				b.Fatal(err)
			}
		}
		written := time.Since(start)
		writeCPU := processCPU() - cpu0
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		durable := time.Since(start)
		writeAlloc := allocated() - alloc0

		r, err := c.Open(ctx, "/bench")
		if err != nil {
			b.Fatal(err)
		}
		alloc0 = allocated()
		cpu0 = processCPU()
		start = time.Now()
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := r.ReadAt(buf, off); err != nil {
				b.Fatal(err)
			}
		}
		read := time.Since(start)
		readCPU := processCPU() - cpu0
		readAlloc := allocated() - alloc0
		r.Close()

		rawG := raw / 1e9
		w, wd, rd := gbps(size, written), gbps(size, durable), gbps(size, read)
		b.ReportMetric(rawG, "loopback_GB/s")
		b.ReportMetric(w, "write_GB/s")
		b.ReportMetric(w/rawG, "write_ratio")
		b.ReportMetric(rd, "read_GB/s")
		b.ReportMetric(rd/rawG, "read_ratio")
		b.ReportMetric(wd/rawG, "durable_write_ratio")
		b.ReportMetric(w/(diskBuf/1e9), "write_vs_disk")
		b.ReportMetric(float64(writeAlloc)/float64(size), "write_alloc_B/B")
		b.ReportMetric(float64(readAlloc)/float64(size), "read_alloc_B/B")
		b.ReportMetric(rawCPU.Seconds()/writeCPU.Seconds(), "write_cpu_ratio")
		b.ReportMetric(rawCPU.Seconds()/readCPU.Seconds(), "read_cpu_ratio")
		fmt.Printf("\ndata path, %d MiB striped width=4 unit=1M over 4 DSes on loopback:\n", size>>20)
		fmt.Printf("  baseline: raw loopback TCP, 4 connections  %6.2f GB/s\n", rawG)
		fmt.Printf("  write (until the last WriteAt returns)     %6.2f GB/s  ratio %.2f (target >= 0.6)\n", w, w/rawG)
		fmt.Printf("  write + close (fsync on every DS, commit)  %6.2f GB/s  ratio %.2f\n", wd, wd/rawG)
		fmt.Printf("  for scale: the same bytes written into 4 files on the data servers' disk, in this run:\n")
		fmt.Printf("    raw disk, buffered                       %6.2f GB/s  (Strata write / raw disk %.2f)\n", diskBuf/1e9, w/(diskBuf/1e9))
		fmt.Printf("    raw disk, + fsync                        %6.2f GB/s  (Strata durable / raw disk durable %.2f)\n", diskSync/1e9, wd/(diskSync/1e9))
		fmt.Printf("  read (fresh open, CRC verified)            %6.2f GB/s  ratio %.2f (target >= 0.6)\n", rd, rd/rawG)
		fmt.Printf("  heap allocated per byte moved (client and data servers, this process; load-independent):\n")
		fmt.Printf("    write + close %.3f B/B, read %.3f B/B\n", float64(writeAlloc)/float64(size), float64(readAlloc)/float64(size))
		gb := float64(size) / 1e9
		fmt.Printf("  CPU per GB moved (this process: client and data servers; the load moves it far less than time):\n")
		fmt.Printf("    loopback %.2f s, write %.2f s (ratio %.2f), read %.2f s (ratio %.2f)\n", rawCPU.Seconds()/gb,
			writeCPU.Seconds()/gb, rawCPU.Seconds()/writeCPU.Seconds(), readCPU.Seconds()/gb, rawCPU.Seconds()/readCPU.Seconds())
	}
}

// BenchmarkAuth: metadata creates/s and stats/s with authentication on
// (a session token verified on every call) over the same with it off.
func BenchmarkAuth(b *testing.B) {
	d := 6 * time.Second
	if testing.Short() {
		d = time.Second
	}
	for i := 0; i < b.N; i++ {
		m, err := mds.BenchAuth(context.Background(), b.TempDir(), 64, d)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(m.CreateRatio(), "auth_create_ratio")
		b.ReportMetric(m.StatRatio(), "auth_stat_ratio")
		fmt.Printf("\nauthentication, 64 concurrent clients, one MDS, %v per mode and operation in %d adjacent off/on pairs\n", d, m.Pairs)
		fmt.Printf("(ratio: median of the pairs' on/off ratios; CPU: the process's, clients and server alike, per operation):\n")
		fmt.Printf("  creates  off %8.0f /s  on %8.0f /s  ratio %.2f (target >= 0.95)  CPU off %v on %v\n", m.CreatesOff, m.CreatesOn, m.CreateRatio(), m.CreateCPUOff, m.CreateCPUOn)
		fmt.Printf("  stats    off %8.0f /s  on %8.0f /s  ratio %.2f (target >= 0.95)  CPU off %v on %v\n", m.StatsOff, m.StatsOn, m.StatRatio(), m.StatCPUOff, m.StatCPUOn)
	}
}

// BenchmarkMetadata: creates/s and stats/s with 64 concurrent clients
// against one MDS on a durable log, against raw raft applies/s on the same
// log store and bare fasthttp tiny requests/s, all in the same run, in
// interleaved phases (mds.BenchMetadata).
func BenchmarkMetadata(b *testing.B) {
	d := 5 * time.Second
	if testing.Short() {
		d = time.Second
	}
	for i := 0; i < b.N; i++ {
		m, err := mds.BenchMetadata(context.Background(), b.TempDir(), 64, d)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(m.CreatesPerSec, "creates/s")
		b.ReportMetric(m.SingleCreates, "single_creates/s")
		b.ReportMetric(m.StatsPerSec, "stats/s")
		b.ReportMetric(m.SingleStats, "single_stats/s")
		b.ReportMetric(m.RaftAppliesPerSec, "raft_applies/s")
		b.ReportMetric(m.FasthttpPerSec, "fasthttp_req/s")
		b.ReportMetric(m.CreateRatio(), "create_ratio")
		b.ReportMetric(m.SingleCreateRatio(), "single_create_ratio")
		b.ReportMetric(m.StatRatio(), "stat_ratio")
		b.ReportMetric(m.SingleStatRatio(), "single_stat_ratio")
		b.ReportMetric(m.CreateCPURatio(), "create_cpu_ratio")
		b.ReportMetric(m.StatCPURatio(), "stat_cpu_ratio")
		us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
		fmt.Printf("\nmetadata, 64 concurrent clients, one MDS on raft-wal, %v per operation in %d interleaved slices\n", d, 4)
		fmt.Printf("(CPU: the process's, clients and servers alike, per operation):\n")
		fmt.Printf("  baseline: raw raft applies (64 appliers)   %8.0f /s                                 CPU %6.1f us\n", m.RaftAppliesPerSec, us(m.RaftCPU))
		fmt.Printf("  creates, coalesced (MCreateMany)           %8.0f /s  ratio %.2f (target >= 0.6)   CPU %6.1f us, %.2fx raw raft\n", m.CreatesPerSec, m.CreateRatio(), us(m.CreateCPU), m.CreateCPURatio())
		fmt.Printf("  creates, one MCreate call each             %8.0f /s  ratio %.2f                   CPU %6.1f us\n", m.SingleCreates, m.SingleCreateRatio(), us(m.SingleCreateCPU))
		fmt.Printf("  baseline: bare fasthttp tiny requests      %8.0f /s                                 CPU %6.1f us\n", m.FasthttpPerSec, us(m.FasthttpCPU))
		fmt.Printf("  stats, coalesced (MGetattrMany)            %8.0f /s  ratio %.2f (target >= 0.8)   CPU %6.1f us, %.2fx fasthttp\n", m.StatsPerSec, m.StatRatio(), us(m.StatCPU), m.StatCPURatio())
		fmt.Printf("  stats, one MGetattr call each              %8.0f /s  ratio %.2f                   CPU %6.1f us\n", m.SingleStats, m.SingleStatRatio(), us(m.SingleStatCPU))
		fmt.Printf("  goroutines left running by earlier benchmarks: %d\n", m.Leftover)
	}
}
