package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/tiertest"
)

// strataWrapper stands for a site's wrapper around the strata binary (as
// numactl or a module load would be): for half a second its command line
// is not yet the daemon's, then it execs the real binary (path in the
// file "real" beside it). A file fail-CMD-NODE beside it makes that
// daemon fail with two lines on stderr instead, as a broken NVMe would.
const strataWrapper = `#!/usr/bin/perl
use strict;
my $dir = "DIR";
open(my $f, '<', "$dir/real") or die "strata wrapper: $dir/real: $!\n";
my $real = <$f>;
chomp $real;
my $cmd = $ARGV[0];
my $node = "";
for my $i (0 .. $#ARGV - 1) { $node = $ARGV[$i + 1] if $ARGV[$i] eq "--node"; }
$0 = "strata-wrapper";
select(undef, undef, undef, 0.5);
if (-e "$dir/fail-$cmd-$node") {
	print STDERR "strata $cmd: open /dev/nvme9n1: no such device\n";
	print STDERR "strata $cmd: cannot start the data server, giving up\n";
	exit 3;
}
exec($real, @ARGV) or die "strata wrapper: exec $real: $!\n";
`

// TestTierFaults runs what used to drain Slurm nodes or leave tiers
// behind (issue 15) on a real 3-node Slurm with the real plugin and
// agents: a stage-in longer than the plugin's prolog timeout, a stage-in
// cancelled, an unreadable stage-in file, capacity that does not fit, a
// step started while its node's agent restarts, a tier daemon that starts
// slowly or fails, and tiers whose epilog never reached their agent. The
// agents run the tier daemons through strataWrapper, so every tier here
// starts with daemons whose command line is not yet theirs. The subtests
// share the cluster and run in order.
func TestTierFaults(t *testing.T) {
	wrap, err := os.MkdirTemp("/tmp", "strata-wrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wrap) })
	if err := os.Chmod(wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wrap, "strata"), []byte(strings.Replace(strataWrapper, "DIR", wrap, 1)), 0o755)
	e := tiertest.Start(t, tiertest.Options{
		Nodes: 3,
		// A prolog or epilog that takes more than 12 s drains the node.
		SpankArgs: "timeout=12 status_timeout=5 agent_wait=10",
		AgentArgs: "--strata " + filepath.Join(wrap, "strata") + " --stage-rate 512K --ready-timeout 6s --epilog-timeout 5s",
	})
	writeFile(t, filepath.Join(wrap, "real"), []byte(e.Cluster.Strata), 0o644)
	if err := e.Global.Mkdir(context.Background(), "/stage", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("MountError", func(t *testing.T) { testMountError(t, e) })
	t.Run("StageInOutlastsPrologTimeout", func(t *testing.T) { testLongStageIn(t, e) })
	t.Run("StageInCancelled", func(t *testing.T) { testStageInCancelled(t, e) })
	t.Run("UnreadableStageInFile", func(t *testing.T) { testUnreadableFile(t, e) })
	t.Run("Capacity", func(t *testing.T) { testCapacity(t, e) })
	t.Run("StepWaitsForAgentRestart", func(t *testing.T) { testStepWaitsForAgent(t, e) })
	t.Run("DaemonFails", func(t *testing.T) { testDaemonFails(t, e, wrap) })
	t.Run("Leftovers", func(t *testing.T) { testLeftovers(t, e) })
}

// (8) a mount= the cluster refuses names where this cluster mounts
// tiers (plugstack.conf default_mount=), not the built-in default.
func testMountError(t *testing.T, e *tiertest.Env) {
	_, err := e.Sbatch("-N1", "--storage-tier=mount=/elsewhere/%j", "--wrap", "true")
	want := `sbatch: error: storage-tier: item "mount=/elsewhere/%j": this cluster allows no mount path override; the tier is mounted at ` +
		filepath.Join(e.Dir, "mnt", "%j") + " (%j is the job id)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("sbatch with mount=: %v\nwant %s", err, want)
	}
}

// (2) a stage-in that takes longer than the plugin's prolog timeout (12
// s; 8 MiB per node at 512 KiB/s is 16 s) neither fails the prolog nor
// drains a node: the job's batch step waits for it, then reads every
// file.
func testLongStageIn(t *testing.T, e *tiertest.Env) {
	ctx := context.Background()
	if err := e.Global.Mkdir(ctx, "/stage/long", 0o755); err != nil {
		t.Fatal(err)
	}
	sums, total := "", 0
	for i := range 4 {
		b := randomBytes(t, 4<<20)
		name := fmt.Sprintf("f%d", i)
		if err := writeGlobal(ctx, e, "/stage/long/"+name, b); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		sums += hex.EncodeToString(sum[:]) + "  in/" + name + "\n"
		total += len(b)
	}
	writeOut(t, e, "long.sums", []byte(sums), 0o644)
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--uid="+nobody, "--gid="+nobody,
		"--storage-tier=capacity=1G,stage-in=strata:/stage/long:/in", "--wrap",
		"cd $STRATA_TIER_DIR && sha256sum --quiet -c "+outDir(e)+"/long.sums && echo STAGED-OK")
	out := waitJob(t, e, id, "COMPLETED")
	if !strings.Contains(out, "STAGED-OK") {
		t.Errorf("job output:\n%s", out)
	}
	b := tierBody(t, e, id)
	if b.StagedBytes != uint64(total) || b.StagedFiles != 4 {
		t.Errorf("registry: staged %d bytes in %d files, want %d in 4", b.StagedBytes, b.StagedFiles, total)
	}
	if s, end, err := e.HookTimes("n1", "prolog", id); err == nil && len(b.PerNode) > 0 {
		t.Logf("prolog on n1 took %v; stage-in %.1f s on %s (registry)", end.Sub(s), b.PerNode[0].StageSeconds, b.PerNode[0].Node)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (2) scancel stops a running stage-in (here one of 128 MiB per node at
// 512 KiB/s, over 4 minutes): the job leaves the queue, its script never
// runs, nothing of the tier is left, no node is drained.
func testStageInCancelled(t *testing.T, e *tiertest.Env) {
	ctx := context.Background()
	if err := e.Global.Mkdir(ctx, "/stage/huge", 0o755); err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	for i := range 4 {
		f, err := e.Global.Create(ctx, fmt.Sprintf("/stage/huge/f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: 1 MiB of data at each end.
		for _, off := range []int64{0, size - 1<<20} {
			if _, err := f.WriteAt(randomBytes(t, 1<<20), off); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--uid="+nobody, "--gid="+nobody,
		"--storage-tier=capacity=1G,stage-in=strata:/stage/huge:/in", "--wrap", "echo the-script-ran")
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := e.Tier("n1", id)
		if err == nil && st.Phase == "staging" {
			break
		}
		if time.Now().After(deadline) {
			job, _ := e.ShowJob(id)
			t.Fatalf("job %d (%s) is not staging in after a minute: %+v %v", id, job.State, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := e.Run("scancel", strconv.Itoa(int(id))); err != nil {
		t.Fatal(err)
	}
	job, err := e.Wait(id)
	if err != nil {
		t.Fatalf("after scancel: %v", err)
	}
	out, _ := os.ReadFile(filepath.Join(outDir(e), strconv.Itoa(int(id))+".out"))
	if job.State != "CANCELLED" || strings.Contains(string(out), "the-script-ran") {
		t.Errorf("job %d: %s, output %q; want CANCELLED before its script ran", id, job.State, out)
	}
	if b := tierBody(t, e, id); b.StagedBytes >= 4*size {
		t.Errorf("registry: staged %d bytes of %d: the stage-in was not stopped", b.StagedBytes, 4*size)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (8) a stage-in source directory with a file the job's user may not read
// fails the job with the file's name, and the node stays in service.
func testUnreadableFile(t *testing.T, e *tiertest.Env) {
	src := filepath.Join(outDir(e), "unread")
	for _, d := range []string{src, filepath.Join(src, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(src, "a"), []byte("readable\n"), 0o644)
	secret := filepath.Join(src, "sub", "secret")
	writeFile(t, secret, []byte("root's\n"), 0o600)
	id := submit(t, e, "-N2", "-w", "n[2-3]", "--uid="+nobody, "--gid="+nobody,
		"--storage-tier=capacity=256M,stage-in="+src+":/in", "--wrap", "echo the-script-ran")
	out := waitJob(t, e, id, "FAILED")
	// Whichever node fails first names itself ("on node n3: ...") when it
	// is not the node reporting.
	prefix := fmt.Sprintf("strata: storage tier for job %d is not usable: ", id)
	want := fmt.Sprintf("stage-in source %s: %s: permission denied\n", src, secret)
	if !strings.Contains(out, prefix) || !strings.Contains(out, want) || strings.Contains(out, "the-script-ran") {
		t.Errorf("job output %q, want %q...%q and no script output", out, prefix, want)
	}
	checkGone(t, e, id, []string{"n2", "n3"})
	checkIdle(t, e)
}

// (4) capacity is checked against each node's free space and the tiers
// already there: n2's NVMe is a 300 MiB tmpfs; a 200M tier fits, a
// second one next to it does not, nor does capacity=1000T. The jobs that
// do not fit fail with the figures; no node is drained.
func testCapacity(t *testing.T, e *tiertest.Env) {
	nvme := filepath.Dir(e.NVMeDir("n2", 1))
	if out, err := e.OnNode("n2", "mount", "-t", "tmpfs", "-o", "size=300M", "strata-test-nvme", nvme); err != nil {
		t.Fatalf("mount a tmpfs on n2's NVMe directory: %v: %s", err, out)
	}
	defer func() {
		if out, err := e.OnNode("n2", "umount", "-l", nvme); err != nil {
			t.Errorf("umount %s on n2: %v: %s", nvme, err, out)
		}
	}()
	release := filepath.Join(outDir(e), "capacity.release")
	script := writeOut(t, e, "capacity.sh", []byte(`#!/bin/sh
echo a > $STRATA_TIER_DIR/a
i=0; while [ ! -e `+release+` ]; do sleep 0.2; i=$((i+1)); [ $i -lt 600 ] || exit 3; done
cat $STRATA_TIER_DIR/a
`), 0o755)
	a := submit(t, e, "-N2", "-w", "n[1-2]", "--storage-tier=capacity=200M", script)
	waitRunning(t, e, a)
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"capacity=200M", []string{"storage tier: capacity 200M per node does not fit on node n2: its NVMe has ",
			fmt.Sprintf(" promised to the tiers of jobs [%d] already there; ask for at most ", a)}},
		{"capacity=1000T", []string{"storage tier: capacity 1000T per node does not fit on node n"}},
	} {
		id := submit(t, e, "-N2", "-w", "n[1-2]", "--storage-tier="+tc.spec, "--wrap", "echo the-script-ran")
		out := waitJob(t, e, id, "FAILED")
		if !containsAll([]string{out}, tc.want...) || strings.Contains(out, "the-script-ran") {
			t.Errorf("%s: job output %q, want %q and no script output", tc.spec, out, tc.want)
		}
		checkGone(t, e, id, []string{"n1", "n2"})
	}
	writeOut(t, e, "capacity.release", nil, 0o644)
	if out := waitJob(t, e, a, "COMPLETED"); out != "a\n" {
		t.Errorf("job %d output %q", a, out)
	}
	checkGone(t, e, a, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (7) a job step started on a node whose agent is restarting waits for
// the agent (plugstack.conf agent_wait=) instead of failing.
func testStepWaitsForAgent(t *testing.T, e *tiertest.Env) {
	started := filepath.Join(outDir(e), "step.started")
	release := filepath.Join(outDir(e), "step.release")
	script := writeOut(t, e, "step.sh", []byte(`#!/bin/sh
echo hello > $STRATA_TIER_DIR/hello
touch `+started+`
i=0; while [ ! -e `+release+` ]; do sleep 0.2; i=$((i+1)); [ $i -lt 600 ] || exit 3; done
`), 0o755)
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--storage-tier=capacity=256M", script)
	if err := tiertest.WaitFile(started, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := e.KillAgent("n2", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	defer e.EnsureAgent("n2") // for the next subtests, if this one fails
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srun := e.Command(ctx, "srun", "--jobid="+strconv.Itoa(int(id)), "--overlap", "-N1", "-n1", "-w", "n2", "--storage-tier=capacity=256M", "sh", "-c", "cat $STRATA_TIER_DIR/hello")
	var out bytes.Buffer
	srun.Stdout, srun.Stderr = &out, &out
	if err := srun.Start(); err != nil {
		t.Fatal(err)
	}
	sock := strings.ReplaceAll(e.AgentSocket, "%n", "n2")
	waiting := fmt.Sprintf("spank_strata: status of job %d on n2: the strata agent at %s does not answer", id, sock)
	logFile := filepath.Join(e.Dir, "log", "slurmd.n2.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if bytes.Contains(b, []byte(waiting)) {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			_ = srun.Wait()
			t.Fatalf("slurmd.n2.log does not show the step waiting for the agent (%q) after 30 s; srun printed:\n%s", waiting, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := e.StartAgent("n2"); err != nil {
		t.Fatal(err)
	}
	if err := srun.Wait(); err != nil || out.String() != "hello\n" {
		t.Errorf("srun on n2 while its agent restarted: %v, output %q; want hello", err, out.String())
	}
	writeOut(t, e, "step.release", nil, 0o644)
	waitJob(t, e, id, "COMPLETED")
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (3) a tier data server that fails at start: the reason the node's
// prolog gives (slurmd's log), the agent's log and the registry's errors
// all hold the daemon's last lines. (Every tier of this test starts its
// daemons through the wrapper, whose command line is not theirs for
// half a second: readiness is the daemons answering.)
func testDaemonFails(t *testing.T, e *tiertest.Env, wrap string) {
	flag := filepath.Join(wrap, "fail-ds-n2")
	writeFile(t, flag, nil, 0o644)
	defer os.Remove(flag)
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--storage-tier=capacity=256M", "--wrap", "echo the-script-ran")
	const want = "strata ds: open /dev/nvme9n1: no such device"
	deadline := time.Now().Add(time.Minute)
	for {
		st, _ := e.NodeStates()
		if strings.HasPrefix(st["n2"], "drain") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2 is %q a minute after its tier data server failed to start, want drained", st["n2"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range []string{"slurmd.n2.log", "agent.n2.log"} {
		b, _ := os.ReadFile(filepath.Join(e.Dir, "log", l))
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks the data server's last line %q", l, want)
		}
	}
	if b := tierBody(t, e, id); !containsAll(b.Errors, "n2", want) {
		t.Errorf("registry errors %q, want the data server's last line %q", b.Errors, want)
	}
	// Slurm requeues the job held; cancel it, then put n2 back.
	if _, err := e.Run("scancel", strconv.Itoa(int(id))); err != nil {
		t.Error(err)
	}
	if _, err := e.Wait(id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run("scontrol", "update", "nodename=n2", "state=resume"); err != nil {
		t.Fatal(err)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (5) the agents of n2 and n3 are down when the job ends, so its epilog
// never reaches them (Slurm drains both). `strata agent cleanup JOB` on
// n3 (with no agent running there) and the agent restarted on n2 tear
// the ended job's tier down: its daemons, mount, data and state.
func testLeftovers(t *testing.T, e *tiertest.Env) {
	started := filepath.Join(outDir(e), "left.started")
	release := filepath.Join(outDir(e), "left.release")
	script := writeOut(t, e, "left.sh", []byte(`#!/bin/sh
echo data > $STRATA_TIER_DIR/data
touch `+started+`
i=0; while [ ! -e `+release+` ]; do sleep 0.2; i=$((i+1)); [ $i -lt 600 ] || exit 3; done
`), 0o755)
	id := submit(t, e, "-N3", "--storage-tier=capacity=256M", script)
	if err := tiertest.WaitFile(started, time.Minute); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range []string{"n2", "n3"} {
		st, err := e.Tier(n, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Procs {
			pids = append(pids, p.PID)
		}
	}
	args, err := e.AgentArgs("n3")
	if err != nil {
		t.Fatal(err)
	}
	defer e.EnsureAgent("n2")
	defer e.EnsureAgent("n3")
	if err := e.KillAgent("n2", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := e.KillAgent("n3", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	writeOut(t, e, "left.release", nil, 0o644)
	if _, err := e.Wait(id); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.NodeStates(); !strings.HasPrefix(st["n2"], "drain") || !strings.HasPrefix(st["n3"], "drain") {
		t.Errorf("nodes after epilogs that found no agent: %v, want n2 and n3 drained", st)
	}
	// n3: by hand, with the agent's own flags and no agent running.
	cmd := append([]string{e.Cluster.Strata, "agent", "cleanup"}, args[1:]...)
	out, err := e.OnNode("n3", append(cmd, strconv.Itoa(int(id)))...)
	if want := fmt.Sprintf("the storage tier of job %d is torn down on n3", id); err != nil || !strings.Contains(out, want) {
		t.Errorf("strata agent cleanup %d on n3: %v\n%s\nwant %q", id, err, out, want)
	}
	// n2: its agent, on start.
	if err := e.StartAgent("n2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(e.StateFile("n2", id)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n2's restarted agent kept the tier of ended job %d for 30 s", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkGone(t, e, id, []string{"n1", "n2", "n3"})
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("tier process %d of ended job %d still runs", pid, id)
		}
	}
	if err := e.EnsureAgent("n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run("scontrol", "update", "nodename=n[2-3]", "state=resume"); err != nil {
		t.Fatal(err)
	}
	checkIdle(t, e)
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

func writeFile(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
