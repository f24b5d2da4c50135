package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// watchedOps are the mountstats operations a progress line shows.
var watchedOps = []string{"WRITE", "COMMIT", "READ", "LAYOUTGET", "LAYOUTRETURN", "LAYOUTCOMMIT", "LAYOUTERROR", "GETDEVICEINFO"}

// dataOps are the operations that move or make durable a file's bytes:
// while their counts move, the NFS mount makes progress. (A client that
// loops on LAYOUTCOMMIT keeps calling the server without moving a byte.)
var dataOps = []string{"WRITE", "COMMIT", "READ"}

// stallLimit is how long timed I/O may go without progress before the
// guest gives up: it prints "GUEST FAIL stalled" and powers off, so that
// a hang fails a benchmark in minutes, not at its overall deadline. Under
// software emulation on a machine loaded 25 times its cores a 1 MiB call
// took seconds, not minutes.
const stallLimit = 5 * time.Minute

// watch prints a "GUEST PROGRESS" line every period until stop is closed:
// what the timed I/O has done (done MiB), the page cache's dirty and
// writeback memory, free memory, and the NFS mount's counts of the
// operations that move data (/proc/self/mountstats: calls, transmissions,
// timeouts, errors). A write that stalls shows where: bytes stuck dirty,
// in writeback with no WRITE answered, or a LAYOUTCOMMIT that fails over
// and over. If nothing moves for stallLimit it powers the guest off.
// With fuse the I/O goes through a FUSE mount, whose traffic the NFS
// counts leave out: bytes on the guest's network count as progress then.
func watch(what string, fuse bool, done *atomic.Int64, period time.Duration, stop <-chan struct{}) {
	t0 := time.Now()
	tk := time.NewTicker(period)
	defer tk.Stop()
	last, moved := "", time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		ops := opCounts()
		line := fmt.Sprintf("%s t=%.0fs done_mib=%d %s %s", what, time.Since(t0).Seconds(), done.Load(), memLine(), opsLine(ops))
		fmt.Printf("GUEST PROGRESS %s\n", line)
		// Progress: MiB handed to the file system, data operations
		// answered, or with fuse bytes on the guest's network.
		key := fmt.Sprint(done.Load())
		if fuse {
			key += " " + netBytes()
		}
		for _, op := range dataOps {
			key += fmt.Sprint(" ", ops[op][0])
		}
		if key != last {
			last, moved = key, time.Now()
			continue
		}
		if time.Since(moved) >= stallLimit {
			fmt.Printf("GUEST FAIL stalled: no progress for %v: %s\n", stallLimit, line)
			_ = syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
		}
	}
}

// memLine returns the meminfo fields that say where written pages are.
func memLine() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "meminfo=" + err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		switch k := strings.TrimSuffix(fs[0], ":"); k {
		case "MemFree", "Dirty", "Writeback", "NFS_Unstable":
			out = append(out, k+"_kb="+fs[1])
		}
	}
	return strings.Join(out, " ")
}

// netBytes returns the bytes eth0 received and sent.
func netBytes() string {
	var out []string
	for _, f := range []string{"rx_bytes", "tx_bytes"} {
		b, _ := os.ReadFile("/sys/class/net/eth0/statistics/" + f)
		out = append(out, strings.TrimSpace(string(b)))
	}
	return strings.Join(out, "/")
}

// opCounts returns, for each of watchedOps the NFS mount on /mnt called,
// its calls, transmissions, timeouts and errors (/proc/self/mountstats).
func opCounts() map[string][4]string {
	out := map[string][4]string{}
	b, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return out
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "device ") {
			in = strings.Contains(l, " mounted on /mnt with fstype nfs")
			continue
		}
		fs := strings.Fields(l)
		// OP: ops transmissions timeouts bytes_sent bytes_recv queue rtt execute errors
		if !in || len(fs) < 10 {
			continue
		}
		for _, op := range watchedOps {
			if fs[0] == op+":" && fs[1] != "0" {
				out[op] = [4]string{fs[1], fs[2], fs[3], fs[9]}
			}
		}
	}
	return out
}

// opsLine formats ops as "OP=calls/transmissions/timeouts/errors".
func opsLine(ops map[string][4]string) string {
	var out []string
	for _, op := range watchedOps {
		if c, ok := ops[op]; ok {
			out = append(out, fmt.Sprintf("%s=%s/%s/%s/%s", op, c[0], c[1], c[2], c[3]))
		}
	}
	return strings.Join(out, " ")
}
