package e2e

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

	"github.com/strata-hpc/strata/internal/slurmtest"
	"github.com/strata-hpc/strata/jobtier"
)

// TestSlurm loads spank_strata.so into a real Slurm (4 nodes) with a fake
// agent on every node, and checks what a user sees of --storage-tier.
// The subtests share the cluster and run in order.
func TestSlurm(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 4, REST: true, SpankArgs: "timeout=20 status_timeout=5 agent_wait=2"})
	t.Logf("devcluster in %s, %s mode", c.Dir, c.Mode)
	agent := startFakeAgent(t, c.AgentSocket, c.Nodes, filepath.Join(c.Dir, "tiers"))

	t.Run("MalformedSpecQueuesNothing", func(t *testing.T) { testMalformed(t, c) })
	t.Run("TierOnThreeNodes", func(t *testing.T) { testTierOnThreeNodes(t, c, agent) })
	t.Run("UserErrorFailsJobNotNode", func(t *testing.T) { testUserError(t, c, agent) })
	t.Run("SrunAndSalloc", func(t *testing.T) { testSrunSalloc(t, c, agent) })
	t.Run("UnreachableAgentDrainsNode", func(t *testing.T) { testUnreachableAgent(t, c, agent) })
	t.Run("BandwidthLicense", func(t *testing.T) { testBandwidthLicense(t, c) })
}

// contrib/slurm/job_submit.lua (installed by the devcluster) turns the
// bw=RATE of --storage-tier, or the older --comment=bw=N, into strata_bw
// licenses (one per GiB/s), which scontrol and slurmrestd report; a bad
// bw= fails sbatch with the grammar's line and queues nothing.
func testBandwidthLicense(t *testing.T, c *slurmtest.Cluster) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--storage-tier=capacity=1G,bw=2G,qos=drain"}, "strata_bw:2"},
		{[]string{"--storage-tier=capacity=1G,bw=1536M/s"}, "strata_bw:2"},
		{[]string{"--storage-tier=capacity=1G,bw=3G", "--comment=bw=9"}, "strata_bw:3"}, // the tier spec wins
		{[]string{"--comment=bw=20"}, "strata_bw:20"},
	} {
		id, err := c.Sbatch(append([]string{"--hold", "-o", outFile(c, "%j")}, append(tc.args, "--wrap", "true")...)...)
		if err != nil {
			t.Fatal(err)
		}
		job, err := c.ShowJob(id)
		if err != nil || job.Fields["Licenses"] != tc.want {
			t.Errorf("sbatch %s: Licenses=%q (%v), want %s", strings.Join(tc.args, " "), job.Fields["Licenses"], err, tc.want)
		}
		if _, err := c.Run("scancel", strconv.FormatUint(uint64(id), 10)); err != nil {
			t.Error(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--storage-tier=capacity=1G,bw=lots"}, `sbatch: error: storage-tier: item "bw=lots": bw must be a drain rate like 2G or 500M (bytes per second)`},
		{[]string{"--storage-tier=bw=200000G"}, `sbatch: error: storage-tier: item "bw=200000G": bw must be at most 100000G`},
		{[]string{"--storage-tier=capacity=1G,qos=rebuild"}, `sbatch: error: storage-tier: item "qos=rebuild": qos=rebuild is the data servers' own class; a job may ask for io, stage, drain`},
		{[]string{"--comment=bw=lots"}, "sbatch: error: strata: bw=lots: want a whole number of GiB/s"},
	} {
		_, err := c.Sbatch(append([]string{"-J", "refused-bw"}, append(tc.args, "--wrap", "true")...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sbatch %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	if out, err := c.Run("squeue", "-h", "-t", "all", "-n", "refused-bw"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after refused bw= submissions squeue shows %q (err %v), want nothing", out, err)
	}
	body, err := c.REST("/slurm/v0.0.38/licenses")
	if err != nil || !strings.Contains(body, `"LicenseName": "strata_bw"`) || !strings.Contains(body, `"Total": 100`) {
		t.Errorf("slurmrestd /licenses: %v\n%s", err, body)
	}
}

// (a) sbatch fails with the grammar's message, and nothing is queued.
func testMalformed(t *testing.T, c *slurmtest.Cluster) {
	for _, tc := range []struct{ spec, want string }{
		{"capacity=lots", `sbatch: error: storage-tier: item "capacity=lots": capacity must be a size like 200G`},
		{"capacity=1G,drain=ckpt/*", `sbatch: error: storage-tier: item "drain=ckpt/*": want drain=GLOB:DEST, e.g. drain=ckpt/*:strata:/proj/run42`},
		{"mount=/scratch/me", `sbatch: error: storage-tier: item "mount=/scratch/me": this cluster allows no mount path override`},
	} {
		_, err := c.Sbatch("-N2", "--storage-tier="+tc.spec, "--wrap", "true")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sbatch --storage-tier=%s: %v\nwant %s", tc.spec, err, tc.want)
		}
	}
	out, err := c.Run("squeue", "-h", "-t", "all")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after refused submissions squeue -t all shows %q (err %v), want nothing", out, err)
	}
}

// (b) sbatch -N3 as an ordinary user: the agent sees prolog and epilog on
// all three nodes with the job's id, uid, gid, node list and spec; the
// batch script and every task see STRATA_TIER_DIR from their own node's
// agent; every node ends idle.
func testTierOnThreeNodes(t *testing.T, c *slurmtest.Cluster, agent *fakeAgent) {
	agent.mu.Lock()
	agent.romio = true
	agent.mu.Unlock()
	defer func() { agent.mu.Lock(); agent.romio = false; agent.mu.Unlock() }()

	spec := "capacity=1G,stage-in=" + filepath.Join(c.Dir, "etc", "slurm.conf") + ":/in/slurm.conf,drain=ckpt/*:strata:/proj/run42"
	script := writeScript(t, c, "three.sh", `#!/bin/sh
echo "batch node=$SLURMD_NODENAME uid=$(id -u) tier=$STRATA_TIER_DIR romio=$ROMIO_HINTS"
srun -N3 -n3 sh -c 'echo "task node=$SLURMD_NODENAME tier=$STRATA_TIER_DIR"; touch "$STRATA_TIER_DIR/by-$SLURMD_NODENAME"'
`)
	id, err := c.Sbatch("-N3", "-w", "n[1-3]", "--uid=65534", "--gid=65534", "-o", outFile(c, "%j"), "--storage-tier="+spec, script)
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Wait(id)
	if err != nil {
		t.Fatal(err)
	}
	out := readOut(t, c, id)
	if job.State != "COMPLETED" || job.ExitCode != "0:0" {
		t.Fatalf("job %d %s exit %s, output:\n%s", id, job.State, job.ExitCode, out)
	}
	tier := func(node string) string { return filepath.Join(agent.base, strconv.Itoa(int(id)), node) }
	for _, want := range []string{
		fmt.Sprintf("batch node=n1 uid=65534 tier=%s romio=%s/.romio-hints", tier("n1"), tier("n1")),
		"task node=n1 tier=" + tier("n1"),
		"task node=n2 tier=" + tier("n2"),
		"task node=n3 tier=" + tier("n3"),
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("job output lacks %q:\n%s", want, out)
		}
	}

	reqs := agent.requests(id)
	for _, op := range []jobtier.HookOp{jobtier.OpProlog, jobtier.OpEpilog} {
		got := byOp(reqs, op)
		var nodes []string
		for _, q := range got {
			nodes = append(nodes, q.Node)
			want := jobtier.HookRequest{Op: op, JobID: id, UID: 65534, GID: 65534, Nodes: "n[1-3]", Node: q.Node, Spec: spec}
			if q.Restarts == nil || *q.Restarts != 0 {
				t.Errorf("%s request from %s: restarts %v, want 0 (a first run)", op, q.Node, q.Restarts)
			}
			q.Restarts = nil
			if q != want {
				t.Errorf("%s request\n got %+v\nwant %+v", op, q, want)
			}
		}
		slices.Sort(nodes)
		if !slices.Equal(nodes, []string{"n1", "n2", "n3"}) {
			t.Errorf("%s seen from %v, want n1 n2 n3 once each", op, nodes)
		}
	}
	// The batch step on n1, then the srun step on n1..n3, each ask their
	// own node's agent (an srun inside the job carries the batch node's
	// SLURMD_NODENAME in its environment: the plugin must not use it).
	var status []string
	for _, q := range byOp(reqs, jobtier.OpStatus) {
		status = append(status, q.Node)
		if q.UID != 65534 || q.GID != 65534 {
			t.Errorf("status request %+v, want uid and gid 65534", q)
		}
	}
	slices.Sort(status)
	if !slices.Equal(status, []string{"n1", "n1", "n2", "n3"}) {
		t.Errorf("status requests from %v, want n1 n1 n2 n3 (batch step, then the srun step)", status)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if seq := opsOf(reqs, n); seq[0] != jobtier.OpProlog || seq[len(seq)-1] != jobtier.OpEpilog {
			t.Errorf("%s saw %v, want prolog first and epilog last", n, seq)
		}
	}
	checkIdle(t, c)
}

// (c) the agent says the job is at fault (a missing stage-in source): the
// job fails with the agent's message in its output, the script never
// runs, and the nodes stay in service.
func testUserError(t *testing.T, c *slurmtest.Cluster, agent *fakeAgent) {
	spec := "capacity=1G,stage-in=/nonexistent/strata-test-data:/in"
	id, err := c.Sbatch("-N2", "-w", "n[1-2]", "-o", outFile(c, "%j"), "--storage-tier="+spec, "--wrap", "echo the-script-ran")
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Wait(id)
	if err != nil {
		t.Fatal(err)
	}
	out := readOut(t, c, id)
	want := fmt.Sprintf("strata: storage tier for job %d is not usable: stage-in source /nonexistent/strata-test-data: no such file or directory\n", id)
	if job.State != "FAILED" || !strings.Contains(out, want) || strings.Contains(out, "the-script-ran") {
		t.Errorf("job %d %s exit %s, output %q; want FAILED with %q", id, job.State, job.ExitCode, out, want)
	}
	reqs := agent.requests(id)
	if len(byOp(reqs, jobtier.OpProlog)) != 2 || len(byOp(reqs, jobtier.OpEpilog)) != 2 {
		t.Errorf("agent saw %+v, want a prolog and an epilog on n1 and n2", reqs)
	}
	checkIdle(t, c)
}

// (d) srun and salloc reach the plugin: validation at submit, prolog and
// epilog on the allocated nodes, STRATA_TIER_DIR in the tasks.
func testSrunSalloc(t *testing.T, c *slurmtest.Cluster, agent *fakeAgent) {
	task := `echo "job=$SLURM_JOB_ID node=$SLURMD_NODENAME tier=$STRATA_TIER_DIR"`
	for _, tc := range []struct {
		name  string
		args  []string
		nodes []string
	}{
		{"srun", []string{"srun", "-N2", "-w", "n[1-2]", "--storage-tier=capacity=2G", "sh", "-c", task}, []string{"n1", "n2"}},
		{"salloc", []string{"salloc", "-N2", "-w", "n[3-4]", "--storage-tier=capacity=3G", "srun", "sh", "-c", task}, []string{"n3", "n4"}},
	} {
		out, err := c.Run(tc.args[0], tc.args[1:]...)
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
			want := fmt.Sprintf("job=%d node=%s tier=%s\n", id, n, filepath.Join(agent.base, m[1], n))
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", tc.name, want, out)
			}
		}
		if _, err := c.Wait(id); err != nil {
			t.Fatal(err)
		}
		reqs := agent.requests(id)
		for _, op := range []jobtier.HookOp{jobtier.OpProlog, jobtier.OpEpilog} {
			var nodes []string
			for _, q := range byOp(reqs, op) {
				nodes = append(nodes, q.Node)
			}
			slices.Sort(nodes)
			if !slices.Equal(nodes, tc.nodes) {
				t.Errorf("%s: %s seen from %v, want %v", tc.name, op, nodes, tc.nodes)
			}
		}
	}
	for _, cmd := range [][]string{
		{"srun", "-N1", "--storage-tier=capacity=1G,unit=3K", "true"},
		{"salloc", "-N1", "--storage-tier=redundancy=rs:4+2", "true"},
	} {
		_, err := c.Run(cmd[0], cmd[1:]...)
		if err == nil || !strings.Contains(err.Error(), cmd[0]+": error: storage-tier: item ") {
			t.Errorf("%s: %v, want the grammar's message", strings.Join(cmd, " "), err)
		}
	}
	checkIdle(t, c)
}

// (e) a node whose agent does not answer is broken: the prolog fails and
// Slurm drains the node. A job without --storage-tier never calls the
// agent.
func testUnreachableAgent(t *testing.T, c *slurmtest.Cluster, agent *fakeAgent) {
	sock := strings.ReplaceAll(c.AgentSocket, "%n", "n4")
	for _, ln := range agent.lns {
		if ln.Addr().String() == sock {
			ln.Close()
		}
	}
	os.Remove(sock)

	id, err := c.Sbatch("-w", "n4", "-o", outFile(c, "%j"), "--wrap", "true")
	if err != nil {
		t.Fatal(err)
	}
	if job, err := c.Wait(id); err != nil || job.State != "COMPLETED" {
		t.Fatalf("a job without --storage-tier on n4: %+v, %v", job, err)
	}

	id, err = c.Sbatch("-w", "n4", "-o", outFile(c, "%j"), "--storage-tier=capacity=1G", "--wrap", "true")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Run("scancel", strconv.Itoa(int(id)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := c.NodeStates()
		if strings.HasPrefix(st["n4"], "drain") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n4 is %q 30 s after a prolog with no agent, want drained", st["n4"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(c.Dir, "log", "slurmd.n4.log"))
	if want := "spank_strata: prolog of job " + strconv.Itoa(int(id)) + " on n4: cannot reach the strata agent at " + sock; !strings.Contains(string(log), want) {
		t.Errorf("slurmd.n4.log lacks %q", want)
	}
	// Slurm requeues the job; cancel it and let its epilog (which fails
	// too, for the same reason) finish before putting n4 back.
	if _, err := c.Run("scancel", strconv.Itoa(int(id))); err != nil {
		t.Error(err)
	}
	if _, err := c.Wait(id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run("scontrol", "update", "nodename=n4", "state=resume"); err != nil {
		t.Fatal(err)
	}
	checkIdle(t, c)
}

func checkIdle(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	if st, err := c.WaitNodes("idle"); err != nil {
		t.Errorf("nodes after the job: %v", err)
		for n := range st {
			if out, err := c.Run("scontrol", "show", "node", n); err == nil {
				t.Log(out)
			}
		}
	}
}

func opsOf(reqs []jobtier.HookRequest, node string) []jobtier.HookOp {
	var ops []jobtier.HookOp
	for _, q := range reqs {
		if q.Node == node {
			ops = append(ops, q.Op)
		}
	}
	return ops
}

func writeScript(t *testing.T, c *slurmtest.Cluster, name, body string) string {
	t.Helper()
	p := filepath.Join(c.Dir, "out", name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func outFile(c *slurmtest.Cluster, pattern string) string {
	return filepath.Join(c.Dir, "out", pattern+".out")
}

func readOut(t *testing.T, c *slurmtest.Cluster, id uint32) string {
	t.Helper()
	b, err := os.ReadFile(outFile(c, strconv.Itoa(int(id))))
	if err != nil {
		t.Errorf("job output: %v", err)
	}
	return string(b)
}
