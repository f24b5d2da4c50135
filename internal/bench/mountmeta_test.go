package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// smallFileSize is what BenchmarkMountMeta writes into each small file.
const smallFileSize = 4 << 10

// dataFileSize is the size of the files BenchmarkMountMeta removes with
// their data: past the inline threshold, on the data servers.
const dataFileSize = 128 << 10

// metaOps are the timed phases of BenchmarkMountMeta, in the order they
// run on one mount: each needs what the one before made.
var metaOps = []string{"mkdir", "create", "stat", "unlink", "rmdir"}

// BenchmarkMountMeta: metadata operations through a Strata mount as an HPC
// job issues them, against a go-fuse loopback mount of a local directory
// (passthrough off, the same cache timeouts) in the same run. One and
// then four separate processes, each in its own directory, make 1,000
// directories, create 1,000 empty files (open O_CREAT|O_EXCL, close), stat
// them once the kernel's caches have expired, unlink them and remove the
// directories; then four processes create, write 4 KiB into and close
// 2,500 small files each and, after the caches expire, open, read back
// (checked) and close every one; then four processes each write 250
// files of 128 KiB (untimed) and remove them, timed until their space is
// back (on Strata until the MDS's orphan queue is empty: the data
// servers' components are removed; the loopback frees it in the
// unlink). Rates are operations (files) per second
// over all processes, from the moment the processes are told to start;
// beside them, the MDS calls per operation (file) the Strata mount made
// and the CPU time per operation of the file system's side (this process:
// the Strata mount with its MDS and data servers, or the loopback mount;
// not the processes making the calls), which a loaded machine moves less
// than the rates.
func BenchmarkMountMeta(b *testing.B) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		b.Skipf("SKIPPING MOUNT METADATA BENCHMARK: /dev/fuse is missing (%v)", err)
	}
	files, small, data := 1000, 2500, 250
	if testing.Short() {
		files, small, data = 200, 250, 50
	}
	for i := 0; i < b.N; i++ {
		cl := testcluster.Start(b, 4)
		opts := fuse.DefaultOptions()
		strata, err := fuse.Mount(context.Background(), cl.Client(), b.TempDir(), opts)
		if err != nil {
			b.Fatal(err)
		}
		defer unmountStrata(b, strata)
		loop := mountLoopback(b, opts)
		wait := opts.AttrTimeout + opts.EntryTimeout + 100*time.Millisecond

		type figures map[string]float64 // "create/1" -> ops/s
		var s, l figures = figures{}, figures{}
		calls := figures{}                        // "create/1" -> Strata MDS calls per entry
		var sc, lc figures = figures{}, figures{} // "create/1" -> CPU us per entry
		for _, m := range []struct {
			dir string
			f   figures
			cpu figures
		}{{strata.Dir(), s, sc}, {loop, l, lc}} {
			for _, procs := range []int{1, 4} {
				root := filepath.Join(m.dir, "meta"+strconv.Itoa(procs))
				dirs, err := procDirs(root, procs)
				if err != nil {
					b.Fatal(err)
				}
				for _, op := range metaOps {
					if op == "stat" {
						time.Sleep(wait)
					}
					before := cl.MDSOps()
					rate, cpu, err := runMetaPhase(op, dirs, files)
					if err != nil {
						b.Fatalf("%s: %s with %d processes: %v", m.dir, op, procs, err)
					}
					m.f[op+"/"+strconv.Itoa(procs)] = rate
					m.cpu[op+"/"+strconv.Itoa(procs)] = float64(cpu) / float64(time.Microsecond)
					if m.dir == strata.Dir() {
						calls[op+"/"+strconv.Itoa(procs)] = mountCalls(before, cl.MDSOps(), procs*files)
					}
				}
				if err := os.RemoveAll(root); err != nil {
					b.Fatal(err)
				}
			}
			root := filepath.Join(m.dir, "small")
			dirs, err := procDirs(root, 4)
			if err != nil {
				b.Fatal(err)
			}
			before := cl.MDSOps()
			start := time.Now()
			if _, _, err := runMetaPhase("write", dirs, small); err != nil {
				b.Fatalf("%s: small files: %v", m.dir, err)
			}
			el := time.Since(start)
			if m.dir == strata.Dir() {
				calls["write"] = mountCalls(before, cl.MDSOps(), 4*small)
			}
			time.Sleep(wait)
			before = cl.MDSOps()
			start = time.Now()
			if _, _, err := runMetaPhase("reread", dirs, small); err != nil {
				b.Fatalf("%s: small files: %v", m.dir, err)
			}
			el += time.Since(start)
			if m.dir == strata.Dir() {
				calls["reread"] = mountCalls(before, cl.MDSOps(), 4*small)
			}
			m.f["small"] = float64(4*small) / el.Seconds()
			if err := os.RemoveAll(root); err != nil {
				b.Fatal(err)
			}
			m.f["rmdata"], m.cpu["rmdata"] = removeData(b, cl, m.dir == strata.Dir(), filepath.Join(m.dir, "data"), data)
		}

		fmt.Printf("\nMetadata through the mount vs a go-fuse loopback mount (no passthrough), 1s caches,\n")
		fmt.Printf("%d entries per process, each process in its own directory:\n", files)
		fmt.Printf("  operation   procs     strata/s   loopback/s   ratio   MDS calls/op   strata 4p/1p   CPU us/op strata, loopback\n")
		for _, op := range metaOps {
			for _, p := range []string{"1", "4"} {
				k := op + "/" + p
				scale := ""
				if p == "4" {
					scale = fmt.Sprintf("%6.2f", s[k]/s[op+"/1"])
				}
				if scale == "" {
					scale = "      "
				}
				fmt.Printf("  %-10s  %5s   %10.0f   %10.0f   %5.2f   %12.2f   %s         %7.1f  %7.1f\n", op, p, s[k], l[k], s[k]/l[k], calls[k], scale, sc[k], lc[k])
				b.ReportMetric(s[k], op+p+"/s")
				b.ReportMetric(s[k]/l[k], op+p+"_ratio")
			}
		}
		fmt.Printf("  small files (4 procs x %d: create, write 4 KiB, close; reopen, read, close)\n", small)
		fmt.Printf("              files/s  %10.0f   %10.0f   %5.2f (goal >= 0.5)\n", s["small"], l["small"], s["small"]/l["small"])
		fmt.Printf("              MDS calls per file: %.2f to write, %.2f to read back\n", calls["write"], calls["reread"])
		b.ReportMetric(s["small"], "small_files/s")
		b.ReportMetric(s["small"]/l["small"], "small_ratio")
		fmt.Printf("  removing files of 128 KiB (4 procs x %d, until the space is back)\n", data)
		fmt.Printf("              files/s  %10.0f   %10.0f   %5.2f   CPU us/file %7.1f  %7.1f\n", s["rmdata"], l["rmdata"], s["rmdata"]/l["rmdata"], sc["rmdata"], lc["rmdata"])
		b.ReportMetric(s["rmdata"], "rmdata/s")
		b.ReportMetric(s["rmdata"]/l["rmdata"], "rmdata_ratio")
	}
}

// removeData has four processes write n files of dataFileSize each under
// root, then remove them, and returns the files removed per second and
// the CPU time per file this process spent, until their space is back:
// on a Strata mount (strata set), until the MDS's orphan queue is empty.
func removeData(b *testing.B, cl *testcluster.Cluster, strata bool, root string, n int) (float64, float64) {
	dirs, err := procDirs(root, 4)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := runMetaPhase("write128", dirs, n); err != nil {
		b.Fatalf("%s: write files of 128 KiB: %v", root, err)
	}
	if strata {
		waitOrphans(b, cl) // none left by the phases before
	}
	start, cpu := time.Now(), cpuTime()
	if _, _, err := runMetaPhase("unlink", dirs, n); err != nil {
		b.Fatalf("%s: remove files of 128 KiB: %v", root, err)
	}
	if strata {
		waitOrphans(b, cl)
	}
	el, used := time.Since(start), cpuTime()-cpu
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	return float64(4*n) / el.Seconds(), float64(used) / float64(time.Microsecond) / float64(4*n)
}

// waitOrphans waits until the MDS has no orphaned layout left to collect.
func waitOrphans(b *testing.B, cl *testcluster.Cluster) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var buf bytes.Buffer
		if err := cl.MDS().WriteMetrics(&buf); err != nil {
			b.Fatal(err)
		}
		if bytes.Contains(buf.Bytes(), []byte("\nstrata_mds_orphans 0\n")) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("orphans still queued after 5 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mountCalls is the MDS calls per entry a phase over n entries made, from
// the MDS's counters before and after it; the cluster's own calls
// (heartbeats, session renewals) are left out.
func mountCalls(before, after map[string]int, n int) float64 {
	total := 0
	for op, c := range after {
		switch op {
		case "heartbeat", "session.renew", "auth.session", "cluster", "statfs":
			continue
		}
		total += c - before[op]
	}
	return float64(total) / float64(n)
}

// procDirs makes one directory per process under root.
func procDirs(root string, procs int) ([]string, error) {
	dirs := make([]string, procs)
	for p := range dirs {
		dirs[p] = filepath.Join(root, "p"+strconv.Itoa(p))
		if err := os.MkdirAll(dirs[p], 0o755); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// runMetaPhase runs helper op in one process per directory, each on n
// entries, and returns the operations per second over all of them,
// counted from when the started processes are told to go (a line on their
// standard input) until the last one exits, and the CPU time this process
// (the file system's side) spent meanwhile per operation.
func runMetaPhase(op string, dirs []string, n int) (float64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	type proc struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		ready *bufio.Reader
		out   bytes.Buffer
	}
	procs := make([]*proc, len(dirs))
	defer func() {
		for _, p := range procs {
			if p != nil && p.cmd.Process != nil && p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		}
	}()
	for i, d := range dirs {
		p := &proc{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^$", d, strconv.Itoa(n))}
		p.cmd.Env = append(os.Environ(), helperEnv+"="+op)
		p.cmd.Dir = os.TempDir() // not in a mount this process serves
		p.cmd.Stderr = &p.out
		var err error
		if p.in, err = p.cmd.StdinPipe(); err != nil {
			return 0, 0, err
		}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			return 0, 0, err
		}
		p.ready = bufio.NewReader(stdout)
		if err := p.cmd.Start(); err != nil {
			return 0, 0, err
		}
		procs[i] = p
	}
	// Wait until every process is ready, so that starting them is not
	// timed.
	for i, p := range procs {
		if line, err := p.ready.ReadString('\n'); line != "ready\n" {
			_ = p.cmd.Wait()
			return 0, 0, fmt.Errorf("helper %s in %s did not start: %v: %s", op, dirs[i], err, p.out.Bytes())
		}
	}
	start, cpu := time.Now(), cpuTime()
	for _, p := range procs {
		if _, err := io.WriteString(p.in, "go\n"); err != nil {
			return 0, 0, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.cmd.Wait()
		}()
	}
	wg.Wait()
	el, used := time.Since(start), cpuTime()-cpu
	for i, err := range errs {
		if err != nil {
			return 0, 0, fmt.Errorf("helper %s in %s: %w: %s", op, dirs[i], err, procs[i].out.Bytes())
		}
	}
	return float64(len(dirs)*n) / el.Seconds(), used / time.Duration(len(dirs)*n), nil
}

// runMetaHelper is a helper process: it waits for a line on standard
// input, then runs op on n entries in directory dir.
func runMetaHelper(op string, args []string) error {
	dir := args[0]
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Errorf("helper %s: bad count %q", op, args[1])
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("helper %s: no start line: %w", op, err)
	}
	data := make([]byte, smallFileSize)
	buf := make([]byte, smallFileSize+1)
	var big []byte
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, "d"+strconv.Itoa(i))
		f := filepath.Join(dir, "f"+strconv.Itoa(i))
		switch op {
		case "mkdir":
			err = os.Mkdir(d, 0o755)
		case "rmdir":
			err = os.Remove(d)
		case "create":
			err = createEmpty(f)
		case "stat":
			_, err = os.Stat(f)
		case "unlink":
			err = os.Remove(f)
		case "write":
			for j := range data {
				data[j] = byte(i + j)
			}
			err = os.WriteFile(f, data, 0o644)
		case "reread":
			err = rereadSmall(f, i, buf)
		case "write128":
			if big == nil {
				big = make([]byte, dataFileSize)
			}
			err = os.WriteFile(f, big, 0o644)
		default:
			return fmt.Errorf("unknown helper %q", op)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func createEmpty(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// rereadSmall reads small file i back and checks its bytes.
func rereadSmall(p string, i int, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := io.ReadFull(f, buf)
	if err != io.ErrUnexpectedEOF {
		return fmt.Errorf("read %s: %d bytes (%v), want %d", p, got, err, smallFileSize)
	}
	for j := 0; j < got; j++ {
		if buf[j] != byte(i+j) {
			return fmt.Errorf("read %s: byte %d is %d, want %d", p, j, buf[j], byte(i+j))
		}
	}
	if got != smallFileSize {
		return fmt.Errorf("read %s: %d bytes, want %d", p, got, smallFileSize)
	}
	return nil
}
