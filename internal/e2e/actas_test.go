package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/tiertest"
)

// (10) The agent stages in and drains as the job's user toward the global
// MDS, which decides (issue 9): bob's job cannot stage in alice's 0600
// file (the job fails with the path and "permission denied", before its
// script, and no node is drained); his drains into alice's 0755
// directory, and over alice's file in a sticky 1777 directory, are
// refused and reported, alice's file keeps her bytes; his drain into the
// sticky directory under a free name works and the file is his.
func testActsAsUser(t *testing.T, e *tiertest.Env) {
	ctx := context.Background()
	aliceUID, aliceGID := tiertest.User(t, "strata-alice")
	bobUID, _ := tiertest.User(t, "strata-bob")
	g := e.Global
	if err := g.Mkdir(ctx, "/alice", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := g.Mkdir(ctx, "/scratch", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := g.Chmod(ctx, "/scratch", 0o1777); err != nil {
		t.Fatal(err)
	}
	aliceResult := []byte("alice's result\n")
	for name, b := range map[string][]byte{"/alice/secret": []byte("alice's secret\n"), "/scratch/result.dat": aliceResult} {
		if err := writeGlobal(ctx, e, name, b); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]uint32{"/alice": 0o755, "/alice/secret": 0o600, "/scratch/result.dat": 0o644} {
		if err := g.Chown(ctx, name, aliceUID, aliceGID); err != nil {
			t.Fatal(err)
		}
		if err := g.Chmod(ctx, name, mode); err != nil {
			t.Fatal(err)
		}
	}

	// Stage-in of her 0600 file: the job fails with that message.
	id := submit(t, e, "-N2", "--uid=strata-bob", "--gid=strata-bob",
		"--storage-tier=capacity=256M,stage-in=strata:/alice/secret:/in", "--wrap", "echo the-script-ran")
	out := waitJob(t, e, id, "FAILED")
	// Whichever node fails first names itself ("on node n2: ...") when it
	// is not the node reporting.
	prefix := fmt.Sprintf("strata: storage tier for job %d is not usable: ", id)
	want := "stage-in source strata:/alice/secret: permission denied\n"
	if !strings.Contains(out, prefix) || !strings.Contains(out, want) || strings.Contains(out, "the-script-ran") {
		t.Errorf("bob's job staging in alice's 0600 file: output %q, want %q...%q and no script output", out, prefix, want)
	}
	if b := tierBody(t, e, id); b.State != "failed" || !containsAll(b.Errors, "stage-in source strata:/alice/secret: permission denied") {
		t.Errorf("registry of bob's stage-in: %+v", b)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
	checkIdle(t, e)

	// Drains: into her directory, over her file in the sticky one, and to
	// a free name there.
	script := writeOut(t, e, "actas.sh", []byte(`#!/bin/sh
set -e
T=$STRATA_TIER_DIR
mkdir -p $T/logs $T/over $T/mine
echo bob > $T/logs/bob.log
echo "bob's result" > $T/over/result.dat
echo "bob's own" > $T/mine/bob.dat
`), 0o755)
	id = submit(t, e, "-N2", "--uid=strata-bob", "--gid=strata-bob",
		"--storage-tier=capacity=256M,drain=logs/*:strata:/alice/logs,drain=over/*:strata:/scratch,drain=mine/*:strata:/scratch", script)
	waitJob(t, e, id, "COMPLETED")
	checkIdle(t, e)
	b := waitTierFinal(t, e, id, 2*time.Minute)
	if b.DrainedFiles != 1 {
		t.Errorf("registry: %d files drained, want 1 (bob.dat); errors %q", b.DrainedFiles, b.Errors)
	}
	if !containsAll(b.Errors, "drain logs/bob.log to strata:/alice/logs/bob.log", "permission denied") {
		t.Errorf("registry errors %q, want the refused drain into alice's directory", b.Errors)
	}
	if !containsAll(b.Errors, "drain over/result.dat to strata:/scratch/result.dat", "operation not permitted") {
		t.Errorf("registry errors %q, want the refused drain over alice's file in the sticky directory", b.Errors)
	}
	if ents, err := g.ReadDir(ctx, "/alice"); err != nil || len(ents) != 1 {
		t.Errorf("/alice holds %v (%v), want her secret only", names(ents), err)
	}
	if got := globalFile(t, e, "/scratch/result.dat"); !bytes.Equal(got, aliceResult) {
		t.Errorf("alice's /scratch/result.dat now holds %q, want %q", got, aliceResult)
	}
	if a, err := g.Stat(ctx, "/scratch/result.dat"); err != nil || a.Uid != aliceUID {
		t.Errorf("alice's /scratch/result.dat: %+v, %v; want it still hers", a, err)
	}
	if got := globalFile(t, e, "/scratch/bob.dat"); string(got) != "bob's own\n" {
		t.Errorf("/scratch/bob.dat: %q", got)
	}
	if a, err := g.Stat(ctx, "/scratch/bob.dat"); err != nil || a.Uid != bobUID {
		t.Errorf("drained /scratch/bob.dat: %+v, %v; want it owned by bob (uid %d)", a, err, bobUID)
	}
	if ents, err := g.ReadDir(ctx, "/scratch"); err != nil || len(ents) != 2 {
		t.Errorf("/scratch holds %v (%v), want result.dat and bob.dat (no temporary file left)", names(ents), err)
	}
	checkGone(t, e, id, []string{"n1", "n2"})
}
