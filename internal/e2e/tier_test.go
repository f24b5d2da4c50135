package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/admin"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/tiertest"
)

// nobody runs the jobs: an ordinary user, so that the tiers' ownership
// and the agent's permission checks are exercised.
const nobody = "65534"

// TestTier runs job tiers end to end on a real 4-node Slurm with the real
// SPANK plugin, a real agent process per node and a global namespace of
// real strata processes. The subtests share the cluster and run in order.
func TestTier(t *testing.T) {
	e := tiertest.Start(t, tiertest.Options{
		Nodes:     4,
		SpankArgs: "timeout=100 status_timeout=10",
		// Two port slots: jobs two ids apart want the same tier MDS ports
		// (SharedFirstNode).
		AgentArgs: "--drain-settle 300ms --scan-interval 100ms --epilog-timeout 60s --port-slots 2",
	})
	ctx := context.Background()
	for _, d := range []struct {
		path string
		mode uint32
	}{{"/global", 0o777}, {"/locked", 0o755}, {"/ds", 0o755}} {
		if err := e.Global.Mkdir(ctx, d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("MalformedSpec", func(t *testing.T) { testMalformed(t, e) })
	t.Run("ThreeNodes", func(t *testing.T) { testThreeNodes(t, e) })
	t.Run("StageIn", func(t *testing.T) { testStageIn(t, e) })
	t.Run("MissingSource", func(t *testing.T) { testMissingSource(t, e) })
	t.Run("AgentRestart", func(t *testing.T) { testAgentRestart(t, e) })
	t.Run("DataServerKilled", func(t *testing.T) { testDSKilled(t, e) })
	t.Run("SrunSalloc", func(t *testing.T) { testSrunSalloc(t, e) })
	t.Run("SharedFirstNode", func(t *testing.T) { testSharedFirstNode(t, e) })
	t.Run("Private", func(t *testing.T) { testPrivate(t, e) })
	t.Run("ActsAsUser", func(t *testing.T) { testActsAsUser(t, e) })
}

// (0) a malformed --storage-tier makes sbatch fail with the grammar's
// message; nothing is queued, no agent is asked.
func testMalformed(t *testing.T, e *tiertest.Env) {
	_, err := e.Sbatch("-N2", "--storage-tier=capacity=1G,drain=ckpt/*", "--wrap", "true")
	want := `sbatch: error: storage-tier: item "drain=ckpt/*": want drain=GLOB:DEST, e.g. drain=ckpt/*:strata:/proj/run42`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("sbatch with a malformed spec: %v\nwant %s", err, want)
	}
	if out, err := e.Run("squeue", "-h", "-t", "all"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("squeue -t all after the refused submission: %q (%v)", out, err)
	}
}

// (1) sbatch -N3: every node writes into the tier and reads what the
// others wrote; files matching the drain rule appear in the global
// namespace byte for byte; a drain to a directory the user may not write
// is refused (and recorded), not done as root; afterwards no node keeps a
// mount, a directory or data of the tier, and every node is idle.
func testThreeNodes(t *testing.T, e *tiertest.Env) {
	data := map[string][]byte{}
	for _, n := range []string{"n1", "n2", "n3"} {
		data[n] = randomBytes(t, 3<<20+int(n[1]))
		writeOut(t, e, "data-"+n, data[n], 0o644)
	}
	script := writeOut(t, e, "three.sh", []byte(`#!/bin/sh
set -e
O=`+outDir(e)+`
grep -q '^striping_factor 3$' "$ROMIO_HINTS" && echo "ROMIO hints for 3 nodes"
srun -N3 -n3 sh -c 'T=$STRATA_TIER_DIR; mkdir -p $T/ckpt $T/scratch $T/logs
cp '$O'/data-$SLURMD_NODENAME $T/ckpt/$SLURMD_NODENAME.dat
echo scratch > $T/scratch/$SLURMD_NODENAME; echo log > $T/logs/$SLURMD_NODENAME.log'
srun -N3 -n3 sh -c 'for n in n1 n2 n3; do cmp '$O'/data-$n $STRATA_TIER_DIR/ckpt/$n.dat || exit 1; done; echo "$SLURMD_NODENAME read all"'
`), 0o755)
	spec := "capacity=1G,drain=ckpt/*:strata:/global/run1,drain=logs/*:strata:/locked/logs"
	id := submit(t, e, "-N3", "-w", "n[1-3]", "--uid="+nobody, "--gid="+nobody, "--storage-tier="+spec, script)
	out := waitJob(t, e, id, "COMPLETED")
	if !strings.Contains(out, "ROMIO hints for 3 nodes\n") {
		t.Errorf("job output lacks the ROMIO hints line:\n%s", out)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if !strings.Contains(out, n+" read all\n") {
			t.Errorf("job output lacks %q:\n%s", n+" read all", out)
		}
		if got := globalFile(t, e, "/global/run1/"+n+".dat"); !bytes.Equal(got, data[n]) {
			t.Errorf("/global/run1/%s.dat: %d bytes, differs from what %s wrote (%d bytes)", n, len(got), n, len(data[n]))
		}
	}
	if ents, err := e.Global.ReadDir(context.Background(), "/global/run1"); err != nil || len(ents) != 3 {
		t.Errorf("/global/run1 holds %v (%v), want the 3 checkpoints only", names(ents), err)
	}
	if ents, err := e.Global.ReadDir(context.Background(), "/locked"); err != nil || len(ents) != 0 {
		t.Errorf("/locked (root's, 0755) holds %v (%v): a drain wrote there for uid %s", names(ents), err, nobody)
	}
	a, err := e.Global.Stat(context.Background(), "/global/run1/n1.dat")
	if err != nil || a.Uid != 65534 {
		t.Errorf("drained file: %+v, %v; want it owned by the job's user", a, err)
	}
	checkGone(t, e, id, []string{"n1", "n2", "n3"})
	checkIdle(t, e)

	b := tierBody(t, e, id)
	if b.State != "done" || b.DrainedFiles != 3 || b.DrainedBytes != uint64(len(data["n1"])+len(data["n2"])+len(data["n3"])) ||
		strings.Join(b.Nodes, ",") != "n1,n2,n3" || b.UID != 65534 || b.Capacity != 1<<30 {
		t.Errorf("GET /v1/tiers/%d: %+v", id, b)
	}
	if !containsAll(b.Errors, "drain logs/n1.log to strata:/locked/logs/n1.log", "permission denied") {
		t.Errorf("registry errors %q, want the refused drain to /locked", b.Errors)
	}
	st, err := e.Strata("tier", "status", strconv.Itoa(int(id)))
	if err != nil || !strings.Contains(st, "state       done") || !strings.Contains(st, "in 3 files") {
		t.Errorf("strata tier status %d: %v\n%s", id, err, st)
	}
	if st, err := e.Strata("tier", "status"); err != nil || !regexp.MustCompile(`(?m)^`+strconv.Itoa(int(id))+` +done +3 `).MatchString(st) {
		t.Errorf("strata tier status: %v\n%s", err, st)
	}
}

// (2) stage-in of a 2 GiB sparse file and 300 small files from the global
// namespace, spread over 4 nodes; the job checks every checksum.
func testStageIn(t *testing.T, e *tiertest.Env) {
	ctx := context.Background()
	const bigSize = 2 << 30
	f, err := e.Global.Create(ctx, "/ds/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var pos int64
	for _, off := range []int64{0, 700 << 20, 1500 << 20, bigSize - 1<<20} {
		blk := randomBytes(t, 1<<20)
		if _, err := f.WriteAt(blk, off); err != nil {
			t.Fatal(err)
		}
		hashZeros(h, off-pos)
		h.Write(blk)
		pos = off + int64(len(blk))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sums := "" + hex.EncodeToString(h.Sum(nil)) + "  in/big.bin\n"
	total := int64(bigSize)
	r := mrand.New(mrand.NewPCG(1, 2))
	if err := e.Global.Mkdir(ctx, "/ds/small", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		b := randomBytes(t, 1+r.IntN(64<<10))
		name := fmt.Sprintf("/ds/small/f%03d", i)
		if err := writeGlobal(ctx, e, name, b); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		sums += hex.EncodeToString(sum[:]) + "  in/small/" + filepath.Base(name) + "\n"
		total += int64(len(b))
	}
	writeOut(t, e, "stage.sums", []byte(sums), 0o644)
	script := writeOut(t, e, "stage.sh", []byte(`#!/bin/sh
cd $STRATA_TIER_DIR && sha256sum --quiet -c `+outDir(e)+`/stage.sums && echo CHECKSUMS-OK
`), 0o755)
	start := time.Now()
	id := submit(t, e, "-N4", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=3G,stage-in=strata:/ds:/in", script)
	// 4 GiB through the tiers' and the global data servers (the source
	// and the read-back): more than a minute on a loaded 2-core machine.
	if _, err := e.WaitFor(id, 4*time.Minute); err != nil {
		t.Fatal(err)
	}
	out := waitJob(t, e, id, "COMPLETED")
	if !strings.Contains(out, "CHECKSUMS-OK") {
		t.Errorf("job output:\n%s", out)
	}
	b := tierBody(t, e, id)
	if b.StagedBytes != uint64(total) || b.StagedFiles != 301 || len(b.PerNode) != 4 {
		t.Errorf("registry: staged %d bytes in %d files over %d nodes, want %d in 301 over 4", b.StagedBytes, b.StagedFiles, len(b.PerNode), total)
	}
	for _, s := range b.PerNode {
		if s.StagedBytes == 0 {
			t.Errorf("node %s staged nothing: the stage-in is not spread over the nodes", s.Node)
		}
	}
	t.Logf("stage-in of %.1f GiB: job done %.1f s after submit, %.0f MB/s staged (registry)", float64(total)/(1<<30), time.Since(start).Seconds(), b.StageRate/1e6)
	checkGone(t, e, id, []string{"n1", "n2", "n3", "n4"})
	checkIdle(t, e)
}

// (3) a missing stage-in source fails the job with that message, before
// its script runs; the nodes stay in service.
func testMissingSource(t *testing.T, e *tiertest.Env) {
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,stage-in=strata:/no/such/data:/in", "--wrap", "echo the-script-ran")
	out := waitJob(t, e, id, "FAILED")
	// Every node lists the sources; whichever fails first names itself
	// ("on node n2: ...") when it is not the node reporting.
	prefix := fmt.Sprintf("strata: storage tier for job %d is not usable: ", id)
	want := "stage-in source strata:/no/such/data: no such file or directory\n"
	if !strings.Contains(out, prefix) || !strings.Contains(out, want) || strings.Contains(out, "the-script-ran") {
		t.Errorf("job output %q, want %q...%q and no script output", out, prefix, want)
	}
	if b := tierBody(t, e, id); b.State != "failed" || !containsAll(b.Errors, "stage-in source strata:/no/such/data: no such file or directory") {
		t.Errorf("registry: %+v", b)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (4) the agents are restarted while the job runs: the first node's (the
// drains') crashes (SIGKILL) and comes back, the second's is stopped as
// systemctl restart would (SIGTERM). The job goes on and every checkpoint,
// also those written after the restarts, drains.
func testAgentRestart(t *testing.T, e *tiertest.Env) {
	started := filepath.Join(outDir(e), "restart.started")
	resume := filepath.Join(outDir(e), "restart.resume")
	script := writeOut(t, e, "restart.sh", []byte(`#!/bin/sh
set -e
mkdir -p $STRATA_TIER_DIR/ckpt
for i in 1 2 3; do seq $i 40000 > $STRATA_TIER_DIR/ckpt/step-$i; done
touch `+started+`
while [ ! -e `+resume+` ]; do sleep 0.1; done
for i in 4 5 6; do seq $i 40000 > $STRATA_TIER_DIR/ckpt/step-$i; done
`+e.Cluster.Strata+` tier drain --wait --timeout 30s $STRATA_TIER_DIR/ckpt/step-6
`), 0o755)
	id := submit(t, e, "-N2", "-w", "n[1-2]", "--uid="+nobody, "--gid="+nobody, "--storage-tier=capacity=1G,drain=ckpt/*:strata:/global/restart", script)
	if err := tiertest.WaitFile(started, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		node string
		sig  syscall.Signal
	}{{"n1", syscall.SIGKILL}, {"n2", syscall.SIGTERM}} {
		if err := e.KillAgent(k.node, k.sig); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Tier(k.node, id); err != nil || st.Phase != "running" {
			t.Fatalf("%s's tier state after its agent stopped: %+v, %v", k.node, st, err)
		}
		if err := e.StartAgent(k.node); err != nil {
			t.Fatal(err)
		}
	}
	writeOut(t, e, "restart.resume", nil, 0o644)
	out := waitJob(t, e, id, "COMPLETED")
	if !strings.Contains(out, "ckpt/step-6: drained to strata:/global/restart/step-6") {
		t.Errorf("job output:\n%s", out)
	}
	for i := 1; i <= 6; i++ {
		want := seq(i, 40000)
		if got := globalFile(t, e, fmt.Sprintf("/global/restart/step-%d", i)); !bytes.Equal(got, want) {
			t.Errorf("/global/restart/step-%d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	for _, n := range []string{"n1", "n2"} {
		log, _ := os.ReadFile(filepath.Join(e.Dir, "log", "agent."+n+".log"))
		if !strings.Contains(string(log), fmt.Sprintf("msg=tier_adopted component=agent node=%s job_id=%d phase=running dead=[]", n, id)) {
			t.Errorf("agent.%s.log does not show the tier adopted with all its daemons", n)
		}
	}
	if b := tierBody(t, e, id); b.State != "done" || b.DrainedFiles != 6 || len(b.Errors) != 0 {
		t.Errorf("registry: %+v", b)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)
}

// (5) the tier data server of one node is killed while the job runs (no
// redundancy): the files with data on it are lost and listed by
// strata tier status; every other file still drains, byte for byte.
func testDSKilled(t *testing.T, e *tiertest.Env) {
	ready := filepath.Join(outDir(e), "dskill.ready")
	resume := filepath.Join(outDir(e), "dskill.resume")
	big := randomBytes(t, 3<<20) // 3 units of 1 MiB: one on every node
	writeOut(t, e, "dskill.big", big, 0o644)
	small := map[string][]byte{}
	for i := range 12 {
		name := fmt.Sprintf("s%02d", i)
		small[name] = randomBytes(t, 1000+i)
		writeOut(t, e, "dskill-small."+name, small[name], 0o644)
	}
	// The files are written outside the drain rule, then moved under it
	// (metadata only) once the data server is known to be down.
	script := writeOut(t, e, "dskill.sh", []byte(`#!/bin/sh
set -e
T=$STRATA_TIER_DIR
mkdir -p $T/tmp $T/ckpt
cp `+outDir(e)+`/dskill.big $T/tmp/big
for f in `+outDir(e)+`/dskill-small.*; do cp $f $T/tmp/${f##*.}; done
touch `+ready+`
while [ ! -e `+resume+` ]; do sleep 0.1; done
mv $T/tmp/* $T/ckpt/
sleep 6
`), 0o755)
	id := submit(t, e, "-N3", "-w", "n[1-3]", "--storage-tier=capacity=1G,unit=1M,drain=ckpt/*:strata:/global/dskill", script)
	if err := tiertest.WaitFile(ready, time.Minute); err != nil {
		job, jerr := e.ShowJob(id)
		b, _ := os.ReadFile(filepath.Join(outDir(e), strconv.Itoa(int(id))+".out"))
		st, _ := e.Strata("tier", "status", strconv.Itoa(int(id)))
		t.Fatalf("%v; job %d: %s %v (%v); output:\n%s\nstrata tier status:\n%s", err, id, job.State, job.Fields["Reason"], jerr, b, st)
	}
	st, err := e.Tier("n2", id)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.Procs["ds"].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait until the tier's MDS has noticed (heartbeat timeout, 2 s).
	tc, err := client.New(client.Config{MDS: st.MDSAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	deadline := time.Now().Add(15 * time.Second)
	for !dsDown(tc, "n2") {
		if time.Now().After(deadline) {
			t.Fatal("the tier MDS does not see n2's data server down 15 s after it was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	writeOut(t, e, "dskill.resume", nil, 0o644)
	waitJob(t, e, id, "COMPLETED")

	b := tierBody(t, e, id)
	lost := map[string]bool{}
	for _, l := range b.Lost {
		lost[l] = true
	}
	if !lost["ckpt/big"] {
		t.Errorf("lost files %v, want ckpt/big (it has a column on n2)", b.Lost)
	}
	drained := 0
	for name, want := range small {
		if lost["ckpt/"+name] {
			continue
		}
		drained++
		if got := globalFile(t, e, "/global/dskill/"+name); !bytes.Equal(got, want) {
			t.Errorf("/global/dskill/%s: %d bytes, want %d", name, len(got), len(want))
		}
	}
	if drained == 0 || b.DrainedFiles != uint64(drained) || len(b.Lost) != 13-drained {
		t.Errorf("drained %d of 12 small files (registry %d), lost %v", drained, b.DrainedFiles, b.Lost)
	}
	out, err := e.Strata("tier", "status", strconv.Itoa(int(id)))
	if err != nil || !strings.Contains(out, "  lost: ckpt/big\n") || !strings.Contains(out, fmt.Sprintf("lost files  %d\n", len(b.Lost))) {
		t.Errorf("strata tier status %d: %v\n%s", id, err, out)
	}
	t.Logf("data server of n2 killed: %d small files drained, lost %v", drained, b.Lost)
	checkGone(t, e, id, []string{"n1", "n2", "n3"})
	checkIdle(t, e)
}

// (6) srun and salloc with --storage-tier get a tier too.
func testSrunSalloc(t *testing.T, e *tiertest.Env) {
	task := `mkdir -p $STRATA_TIER_DIR/out; echo "from $SLURMD_NODENAME" > $STRATA_TIER_DIR/out/$SLURMD_NODENAME; echo "job=$SLURM_JOB_ID node=$SLURMD_NODENAME tier=$STRATA_TIER_DIR"`
	for _, tc := range []struct {
		name  string
		args  []string
		nodes []string
	}{
		{"srun", []string{"srun", "-N2", "-w", "n[1-2]", "--storage-tier=capacity=1G,drain=out/*:strata:/global/srun", "sh", "-c", task}, []string{"n1", "n2"}},
		{"salloc", []string{"salloc", "-N2", "-w", "n[3-4]", "--storage-tier=capacity=1G,drain=out/*:strata:/global/salloc", "srun", "sh", "-c", task}, []string{"n3", "n4"}},
	} {
		out, err := e.Run(tc.args[0], tc.args[1:]...)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		m := regexp.MustCompile(`job=(\d+) node=`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("%s printed %q", tc.name, out)
			continue
		}
		id64, _ := strconv.ParseUint(m[1], 10, 32)
		id := uint32(id64)
		for _, n := range tc.nodes {
			if want := fmt.Sprintf("job=%d node=%s tier=%s\n", id, n, e.MountPath(id)); !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", tc.name, want, out)
			}
		}
		if _, err := e.Wait(id); err != nil {
			t.Fatal(err)
		}
		for _, n := range tc.nodes {
			if got := string(globalFile(t, e, "/global/"+tc.name+"/"+n)); got != "from "+n+"\n" {
				t.Errorf("%s: /global/%s/%s holds %q", tc.name, tc.name, n, got)
			}
		}
		checkGone(t, e, id, tc.nodes)
	}
	checkIdle(t, e)
}

// (7) two tier jobs share their first node, n4, and their ids are equal
// modulo the agents' port slots (2 here), so both want the same tier MDS
// ports: the second takes the next free pair, and both tiers work at once.
func testSharedFirstNode(t *testing.T, e *tiertest.Env) {
	o := outDir(e)
	release := filepath.Join(o, "shared-release")
	_ = os.Remove(release)
	first := writeOut(t, e, "shared-a.sh", []byte(`#!/bin/sh
set -e
echo a > $STRATA_TIER_DIR/a
i=0; while [ ! -e `+release+` ]; do sleep 0.2; i=$((i+1)); [ $i -lt 600 ] || exit 3; done
[ "$(cat $STRATA_TIER_DIR/a)" = a ] && echo "a read its tier"
`), 0o755)
	second := writeOut(t, e, "shared-b.sh", []byte(`#!/bin/sh
set -e
echo b > $STRATA_TIER_DIR/b
[ "$(cat $STRATA_TIER_DIR/b)" = b ] && echo "b read its tier"
touch `+release+`
`), 0o755)
	a := submit(t, e, "-N1", "-n1", "-w", "n4", "--storage-tier=capacity=256M", first)
	waitRunning(t, e, a)
	// An id in between, so that the second tier job's id has a's parity.
	if mid := submit(t, e, "-N1", "-n1", "-w", "n3", "--wrap", "true"); (mid-a)%2 != 1 {
		t.Fatalf("job ids %d, %d are not consecutive", a, mid)
	}
	b := submit(t, e, "-N1", "-n1", "-w", "n4", "--storage-tier=capacity=256M", second)
	if (b-a)%2 != 0 {
		t.Fatalf("job ids %d, %d do not share a port slot", a, b)
	}
	if out := waitJob(t, e, b, "COMPLETED"); !strings.Contains(out, "b read its tier\n") {
		t.Errorf("job %d output:\n%s", b, out)
	}
	if out := waitJob(t, e, a, "COMPLETED"); !strings.Contains(out, "a read its tier\n") {
		t.Errorf("job %d output:\n%s", a, out)
	}
	checkGone(t, e, a, []string{"n4"})
	checkGone(t, e, b, []string{"n4"})
	checkIdle(t, e)
}

// ---------- helpers ----------

// dsDown reports whether the MDS c talks to sees data server id down.
func dsDown(c *client.Client, id string) bool {
	cl, err := c.Cluster(context.Background())
	if err != nil {
		return false
	}
	for _, d := range cl.DataSvrs {
		if d.ID == id {
			return d.State != "up"
		}
	}
	return false
}

func outDir(e *tiertest.Env) string { return filepath.Join(e.Dir, "out") }

func writeOut(t *testing.T, e *tiertest.Env, name string, b []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(outDir(e), name)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// seq is what `seq FIRST LAST` prints.
func seq(first, last int) []byte {
	var b bytes.Buffer
	for i := first; i <= last; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func hashZeros(h io.Writer, n int64) {
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(zero)))
		h.Write(zero[:k])
		n -= k
	}
}

func writeGlobal(ctx context.Context, e *tiertest.Env, name string, b []byte) error {
	f, err := e.Global.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func globalFile(t *testing.T, e *tiertest.Env, name string) []byte {
	t.Helper()
	f, err := e.Global.Open(context.Background(), name)
	if err != nil {
		t.Errorf("open %s in the global namespace: %v", name, err)
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Errorf("read %s: %v", name, err)
	}
	return b
}

func names(ents []rpc.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

func submit(t *testing.T, e *tiertest.Env, args ...string) uint32 {
	t.Helper()
	id, err := e.Sbatch(append([]string{"-o", filepath.Join(outDir(e), "%j.out")}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitJob waits for the job to leave the queue, checks its state, and
// returns its output.
func waitJob(t *testing.T, e *tiertest.Env, id uint32, state string) string {
	t.Helper()
	job, err := e.Wait(id)
	b, _ := os.ReadFile(filepath.Join(outDir(e), strconv.Itoa(int(id))+".out"))
	if err != nil {
		t.Fatalf("job %d: %v; output:\n%s", id, err, b)
	}
	if job.State != state {
		t.Fatalf("job %d is %s (exit %s), want %s; output:\n%s", id, job.State, job.ExitCode, state, b)
	}
	return string(b)
}

// checkGone checks that no node keeps anything of job's tier: no mount,
// no mount point, no data, no state, no daemon.
func checkGone(t *testing.T, e *tiertest.Env, id uint32, nodes []string) {
	t.Helper()
	// The other nodes of a tier kept after its job tear their part down
	// once they see the first node done (its mark, or its MDS gone for
	// a while): wait for it, up to 30 s.
	dir := e.MountPath(id)
	var left []string
	for range 300 {
		left = left[:0]
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			left = append(left, fmt.Sprintf("tier directory %s still exists (%v)", dir, err))
		}
		for _, n := range nodes {
			if m, err := e.Mounted(n, dir); err != nil || m {
				left = append(left, fmt.Sprintf("%s: tier still mounted on %s (%v)", n, dir, err))
			}
			if _, err := os.Stat(e.NVMeDir(n, id)); !os.IsNotExist(err) {
				left = append(left, fmt.Sprintf("%s: tier data %s still exists (%v)", n, e.NVMeDir(n, id), err))
			}
			if _, err := os.Stat(e.StateFile(n, id)); !os.IsNotExist(err) {
				left = append(left, fmt.Sprintf("%s: tier state %s still exists (%v)", n, e.StateFile(n, id), err))
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, l := range left {
		t.Error(l + " 30 s later")
	}
}

// waitRunning waits until the job runs (its prolog, the tier's assembly,
// is done).
func waitRunning(t *testing.T, e *tiertest.Env, id uint32) {
	t.Helper()
	for range 600 {
		job, err := e.ShowJob(id)
		if err == nil && job.State == "RUNNING" {
			return
		}
		if err == nil && job.State != "PENDING" && job.State != "CONFIGURING" {
			t.Fatalf("job %d is %s, not running", id, job.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("job %d did not start within a minute", id)
}

func checkIdle(t *testing.T, e *tiertest.Env) {
	t.Helper()
	if st, err := e.WaitNodes("idle"); err != nil {
		t.Errorf("nodes after the job: %v (%v)", st, err)
	}
}

// tierBody is GET /v1/tiers/{job} of the global MDS's admin API.
func tierBody(t *testing.T, e *tiertest.Env, id uint32) admin.TierBody {
	t.Helper()
	resp, err := http.Get(e.Admin + "/v1/tiers/" + strconv.Itoa(int(id)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b admin.TierBody
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /v1/tiers/%d: %s %s", id, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// containsAll reports whether one of msgs contains every part.
func containsAll(msgs []string, parts ...string) bool {
	for _, m := range msgs {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(m, p)
		}
		if ok {
			return true
		}
	}
	return false
}
