package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/bwholdtest"
	"github.com/strata-hpc/strata/internal/slurmtest"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/jobtier"
)

// TestQoSControllerOnRealSlurm: `strata qos controller`, run beside a
// real slurmctld and fed by a real MDS's bandwidth ledger. With a drain
// backlog above what the data servers absorb within the horizon, a newly
// submitted tier job stays pending with the reason in what its user sees
// (squeue, scontrol show job); it starts by itself once the backlog
// clears. With slurmrestd answering 401, then stopped, jobs are left
// untouched and the failure is logged once, not once a pass.
func TestQoSControllerOnRealSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Slurm")
	}
	bwholdtest.GateLua(t)
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, REST: true, JWT: true, NoSpank: true})
	// One data server that states its bandwidth: 4 GiB/s.
	cl := testcluster.Start(t, 1, testcluster.WithDSConfig(func(cfg *ds.Config) { cfg.QoSBandwidth = 4 * jobtier.LicenseUnit }))
	env := envOf(cl)
	ctx := testcluster.Context(t, 5*time.Minute)
	gl := cl.Client()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := gl.QoSStatus(ctx)
		if err == nil && st.Capacity == 4*jobtier.LicenseUnit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger never showed the data server's 4 GiB/s: %+v, %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A tier still has 30 GiB to drain: over the controller's 10 s
	// horizon, 3 GiB/s is owed.
	drain := func(backlog uint64) {
		t.Helper()
		if err := gl.ReportDrain(ctx, &rpc.QoSDrainReq{Job: 9001, Node: "n1", Backlog: backlog, Files: 1}); err != nil {
			t.Fatal(err)
		}
	}
	drain(30 * jobtier.LicenseUnit)
	sock := "unix:" + filepath.Join(c.Dir, "run", "rest", "slurmrestd.sock")
	ctl := startDaemon(t, env, "qos", "controller", "--slurmrestd", sock, "--horizon", "10s", "--interval", "200ms")

	id := bwholdtest.SubmitAsNobody(t, c, "-L", "strata_bw:2", "--comment=my run", "-o", "/dev/null", "--wrap", "true")
	line := bwholdtest.SqueueLine(t, c, id, "waiting for drain bandwidth")
	want := "PENDING JobHeldUser strata-hold: waiting for drain bandwidth: 3 GiB/s in use or owed + 2 GiB/s for this job > 4 GiB/s capacity; comment was: my run"
	if line != want {
		t.Errorf("squeue of the held job:\n got %s\nwant %s", line, want)
	}
	show, err := c.Run("scontrol", "show", "job", strconv.FormatUint(uint64(id), 10))
	if err != nil || !strings.Contains(show, "Comment=strata-hold: waiting for drain bandwidth: 3 GiB/s") {
		t.Errorf("scontrol show job %d does not say why it waits (%v):\n%s", id, err, show)
	}
	// The drain goes on: 5 GiB left is 0.5 GiB/s owed, and 0.5 + 2 <= 4.
	drain(5 * jobtier.LicenseUnit)
	rec, err := c.Wait(id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != "COMPLETED" || rec.Fields["Comment"] != "my" { // scontrol -o splits "my run" at the space
		t.Errorf("released job: state %s comment %q, want COMPLETED with its own comment back", rec.State, rec.Fields["Comment"])
	}
	ctl.stop(t)

	// slurmrestd answers 401 (no token), then is stopped: a job waiting
	// for the controller stays as it is, and each failure is logged once
	// however many passes fail.
	waiting := bwholdtest.SubmitAsNobody(t, c, "-L", "strata_bw:1", "-o", "/dev/null", "--wrap", "true")
	before := bwholdtest.SqueueLine(t, c, waiting, "waiting for the drain-bandwidth controller")
	url, err := c.RESTURL()
	if err != nil {
		t.Fatal(err)
	}
	failing := func(what string, args ...string) {
		t.Helper()
		d := startDaemon(t, env, append([]string{"qos", "controller", "--interval", "100ms"}, args...)...)
		waitFor(t, what+": a failed pass logged", d, func() bool { return strings.Contains(d.err.String(), "pass failed") })
		// 3 s more: about 30 more passes, all failing.
		time.Sleep(3 * time.Second)
		d.stop(t)
		log := d.err.String()
		if n := strings.Count(log, "pass failed, jobs left untouched"); n != 1 {
			t.Errorf("%s: %d failure lines over ~30 failed passes, want 1:\n%s", what, n, log)
		}
		if what == "401" && !strings.Contains(log, "unauthorized=true") {
			t.Errorf("401: the log does not say slurmrestd refused the controller:\n%s", log)
		}
		t.Logf("%s: controller's log:\n%s", what, log)
	}
	failing("401", "--slurmrestd", url, "--slurm-user", "root")
	bwholdtest.StopREST(t, c)
	failing("stopped", "--slurmrestd", sock)
	if after := bwholdtest.SqueueLine(t, c, waiting, "waiting for"); after != before {
		t.Errorf("job %d changed while slurmrestd failed:\n%s\n%s", waiting, before, after)
	}
}
