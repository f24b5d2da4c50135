package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestAdminRepair: the failure-handling verbs of `strata admin` against a
// real cluster: ds list, a drain refused with its reason, a drain that
// completes, rebuild status, scrub start and status, and usage errors.
func TestAdminRepair(t *testing.T) {
	cl := testcluster.Start(t, 6)
	env := envOf(cl)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	f, err := c.OpenFileLayout(ctx, "/ckpt", os.O_RDWR|os.O_CREATE, 0o644, "unit=64K,scheme=rs:4+2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 300<<10)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out := strata(t, env, "admin", "ds", "list").ok(t).stdout
	if !strings.HasPrefix(out, "DS ") || strings.Count(out, "\n") != 7 || !strings.Contains(out, "ds6") {
		t.Fatalf("ds list:\n%s", out)
	}
	// Six data servers, an rs:4+2 file on all of them: nowhere to go.
	strata(t, env, "admin", "ds", "drain", "ds2").fails(t, 1, "cannot drain ds2: its data has nowhere to go")
	strata(t, env, "admin", "ds", "drain", "nope").fails(t, 1, `data server "nope" is not registered`)
	out = strata(t, env, "admin", "rebuild", "status").ok(t).stdout
	if !strings.HasPrefix(out, "rebuild: 0 running, 0 queued") {
		t.Fatalf("rebuild status:\n%s", out)
	}
	out = strata(t, env, "admin", "scrub", "start").ok(t).stdout
	if !strings.Contains(out, "ds1") || !strings.Contains(out, "no unrecoverable blocks") {
		t.Fatalf("scrub start:\n%s", out)
	}
	for {
		out = strata(t, env, "admin", "scrub", "status").ok(t).stdout
		done := 0
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(f[0], "ds") && f[1] == "idle" && f[2] == "1" && f[3] == "1" {
				done++ // one pass over the one component each holds
			}
		}
		if done == 6 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("scrub not done:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	strata(t, env, "admin", "scrub").fails(t, 2, "want: rebuild status")
	strata(t, env, "admin", "ds", "drain").fails(t, 2, "want: rebuild status")
}

// TestAdminDSAdd: a data server started after the cluster joins, and
// `strata admin ds add ADDR` says so; an address where no data server
// answers is a one-line error.
func TestAdminDSAdd(t *testing.T) {
	cl := testcluster.Start(t, 3)
	env := envOf(cl)
	ctx := testcluster.Context(t, time.Minute)
	i, err := cl.AddDS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := strata(t, env, "admin", "ds", "add", cl.DSAddr(i)).ok(t).stdout
	if !strings.HasPrefix(out, "ds4 joined at "+cl.DSAddr(i)) || !strings.Contains(out, ": up,") || !strings.Contains(out, "rebalance_spread") {
		t.Fatalf("ds add:\n%s", out)
	}
	strata(t, env, "admin", "ds", "add", "127.0.0.1:1").fails(t, 1, "no data server answers at 127.0.0.1:1")
}
