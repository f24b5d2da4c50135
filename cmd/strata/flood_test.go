package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// asMain is the environment variable under which the test binary runs
// the strata command line instead of the tests (devProcess).
const asMain = "STRATA_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(exitCode(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

// devProc is `strata dev` running as a process of its own (this test
// binary as the strata command), so that its memory can be measured and
// its log read as an operator would.
type devProc struct {
	cmd     *exec.Cmd
	mds     string
	secret  string // its cluster secret file
	ds      []string
	log     *syncBuffer // stderr: the daemons' log
	stopped chan struct{}
}

// startDevProcess starts `strata dev` with nds data servers and waits for
// it to print its addresses.
func startDevProcess(t *testing.T, nds int, extra ...string) *devProc {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dev")
	args := append([]string{"dev", "--dir", dir, "--ds", strconv.Itoa(nds), "--mds-addr", "127.0.0.1:0",
		"--raft-addr", "127.0.0.1:0", "--admin-addr", "off", "--ds-port", "0", "--log-level", "info"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &devProc{cmd: cmd, secret: filepath.Join(dir, "secret"), log: &syncBuffer{}, stopped: make(chan struct{})}
	cmd.Stderr = d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(d.stopped) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-d.stopped:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-d.stopped
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	mdsRe := regexp.MustCompile(`^  mds    (\S+)$`)
	dsRe := regexp.MustCompile(`^  ds\d+ +(\S+)$`)
	deadline := time.After(time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("strata dev exited before it was up; log:\n%s", d.log.String())
			}
			if m := mdsRe.FindStringSubmatch(l); m != nil {
				d.mds = m[1]
			}
			if m := dsRe.FindStringSubmatch(l); m != nil {
				d.ds = append(d.ds, m[1])
			}
			if strings.HasPrefix(l, "try: ") {
				go func() {
					for range lines { // drain stdout
					}
				}()
				if d.mds == "" || len(d.ds) != nds {
					t.Fatalf("strata dev printed no addresses (mds %q, ds %q)", d.mds, d.ds)
				}
				return d
			}
		case <-deadline:
			t.Fatalf("strata dev not up after a minute; log:\n%s", d.log.String())
		}
	}
}

// memKiB returns a /proc/PID/status field (VmRSS, VmHWM) in KiB.
func (d *devProc) memKiB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/PID/status", field)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// flood opens conns connections to addr, each sending the headers of a
// POST to method declaring length body bytes, then prefix and send more
// bytes of that body; it holds every connection open until all have sent
// what they could (or the server closed them), then closes them. It
// returns how many were answered with HTTP status want.
func flood(t *testing.T, addr, method string, conns, length int, prefix []byte, send int, want int) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	var refused atomic.Int64
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	chunk := make([]byte, 64<<10)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
		wg.Go(func() {
			_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := fmt.Fprintf(c, "POST /rpc/%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", method, addr, length, prefix); err != nil {
				return
			}
			for sent := 0; sent < send; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					break // refused and closed by the server: what we want
				}
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			if strings.HasPrefix(line, fmt.Sprintf("HTTP/1.1 %d ", want)) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	return int(refused.Load())
}

// TestMemoryFlood: 64 connections declaring huge bodies (75 MB metadata
// calls to the MDS, 64 MiB writes without a capability to a data server),
// each sending 8 MiB of them, are refused (413, 403) and leave `strata
// dev` under baseline + 256 MiB resident at its peak, and it still serves. Unbounded, fasthttp
// allocated each declared body up front and the data server read writes
// before it checked their capability: the same flood took GiBs.
func TestMemoryFlood(t *testing.T) {
	const (
		conns   = 64
		send    = 8 << 20
		boundKB = 256 << 10
	)
	d := startDevProcess(t, 1)
	env := map[string]string{"STRATA_MDS": d.mds, "STRATA_SECRET_FILE": d.secret}
	strata(t, env, "mkdir", "/before").ok(t)
	base := d.memKiB(t, "VmRSS")

	if n := flood(t, d.mds, rpc.MGetattr, conns, 75_000_000, nil, send, 413); n != conns {
		t.Errorf("MDS flood: %d of %d connections refused with 413", n, conns)
	}
	if peak := d.memKiB(t, "VmHWM"); peak > base+boundKB {
		t.Errorf("MDS flood: peak RSS %d MiB, baseline %d MiB: over the %d MiB bound", peak>>10, base>>10, boundKB>>10)
	}
	// Writes of 64 MiB (within the data limit) whose capability is
	// forged: refused (403) before their data is read. (72 MiB ones are
	// over the limit, refused from their length: 413.)
	hdr := appendTestFrame(&rpc.DSReq{ID: rpc.ComponentID{Ino: 2, Gen: 1}, Off: 0})
	if n := flood(t, d.ds[0], rpc.DWrite, conns, len(hdr)+rpc.MaxData, hdr, send, 403); n != conns {
		t.Errorf("data server flood: %d of %d connections refused with 403", n, conns)
	}
	if peak := d.memKiB(t, "VmHWM"); peak > base+boundKB {
		t.Errorf("data server flood: peak RSS %d MiB, baseline %d MiB: over the %d MiB bound", peak>>10, base>>10, boundKB>>10)
	}
	t.Logf("strata dev RSS: baseline %d MiB, peak %d MiB after both floods", base>>10, d.memKiB(t, "VmHWM")>>10)
	if out := strata(t, env, "ls", "/").ok(t).stdout; out != "before\n" {
		t.Errorf("after the floods ls / = %q", out)
	}
}

// appendTestFrame encodes msg as a request frame: version, length, message.
func appendTestFrame(msg any) []byte {
	m := rpc.Marshal(nil, msg)
	b := []byte{rpc.Version}
	b = appendUvarint(b, uint64(len(m)))
	return append(b, m...)
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// TestNoWholeBodyWarning: copying 1 GiB through `strata dev` leaves no
// fasthttp "Request.Body() reads the entire stream into memory" warning
// in its log (issue 12): every body is streamed or sized properly.
func TestNoWholeBodyWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: copies 1 GiB")
	}
	d := startDevProcess(t, 2)
	env := map[string]string{"STRATA_MDS": d.mds, "STRATA_SECRET_FILE": d.secret}
	src := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i*31 + i>>8)
	}
	for i := range 1024 {
		block[0], block[1] = byte(i), byte(i>>8)
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	strata(t, env, "cp", src, "/big").ok(t)
	if out := strata(t, env, "stat", "/big").ok(t).stdout; !strings.Contains(out, strconv.Itoa(1<<30)) {
		t.Fatalf("stat /big after cp:\n%s", out)
	}
	if log := d.log.String(); strings.Contains(log, "entire stream") {
		n := strings.Count(log, "entire stream")
		t.Fatalf("strata dev logged fasthttp's whole-body warning %d times:\n%s", n, linesWith(log, "entire stream", 3))
	}
}

// linesWith returns the first n lines of s that contain sub.
func linesWith(s, sub string, n int) string {
	r := bufio.NewScanner(strings.NewReader(s))
	var out []string
	for len(out) < n && r.Scan() {
		if strings.Contains(r.Text(), sub) {
			out = append(out, r.Text())
		}
	}
	return strings.Join(out, "\n")
}

// TestMDSBodyFlood: 384 connections each sending a metadata call's body
// within the 1 MiB limit (and never its last bytes) leave the MDS, run
// with GOMEMLIMIT=128MiB, under baseline + 192 MiB resident at its peak
// (512 MiB with -race):
// the bodies it reads whole come from a bounded budget (64 MiB); the calls
// that find none within 10 s are refused as busy (503, EAGAIN) before
// anything is allocated for them, and the MDS still serves. Unbounded,
// every connection held its 1 MiB at once: over 384 MiB, whatever the
// memory limit.
func TestMDSBodyFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a flood of 384 MiB")
	}
	const (
		conns  = 384
		length = 1_040_000
		send   = 15 * 64 << 10 // all but the last 56 KB
	)
	boundKB := int64(192 << 10)
	if raceEnabled {
		// The race detector shadows what the process touches: about
		// 375 MiB bounded, 1085 MiB unbounded, measured.
		boundKB = 512 << 10
	}
	// The soft memory limit an operator gives the daemon in its config
	// file (memory_limit, docs/config.md), not GOMEMLIMIT: the budget
	// bounds the bodies alive at once, the limit has the garbage of the
	// ones done collected before the heap grows past it.
	t.Setenv("GOMEMLIMIT", "")
	conf := filepath.Join(t.TempDir(), "dev.toml")
	if err := os.WriteFile(conf, []byte("memory_limit = \"128M\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDevProcess(t, 1, "--config", conf)
	for logged := time.Now().Add(30 * time.Second); !strings.Contains(d.log.String(), "msg=memory_limit"); {
		if time.Now().After(logged) {
			t.Fatalf("strata dev did not log its memory limit; log:\n%s", d.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(d.log.String(), "bytes=134217728") {
		t.Errorf("strata dev's memory limit is not memory_limit's 128M; log:\n%s", d.log.String())
	}
	env := map[string]string{"STRATA_MDS": d.mds, "STRATA_SECRET_FILE": d.secret}
	strata(t, env, "mkdir", "/before").ok(t)
	base := d.memKiB(t, "VmRSS")
	busy := flood(t, d.mds, rpc.MSetXattr, conns, length, nil, send, 503)
	peak := d.memKiB(t, "VmHWM")
	t.Logf("strata dev RSS: baseline %d MiB, peak %d MiB; %d of %d connections refused as busy", base>>10, peak>>10, busy, conns)
	if peak > base+boundKB {
		t.Errorf("MDS body flood: peak RSS %d MiB, baseline %d MiB: over the %d MiB bound", peak>>10, base>>10, boundKB>>10)
	}
	if busy == 0 {
		t.Errorf("MDS body flood: no connection of %d refused as busy (503)", conns)
	}
	if out := strata(t, env, "ls", "/").ok(t).stdout; out != "before\n" {
		t.Errorf("after the flood ls / = %q", out)
	}
}
