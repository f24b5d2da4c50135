package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestMDSRecover: a 3-voter MDS group loses two voters for good; the
// survivor cannot commit anything. Stopped, recovered with `strata admin
// mds recover` to a configuration of itself alone, and started again, it
// leads, and every file written (and acknowledged) before the loss reads
// back byte for byte; new writes work. `admin mds add` refuses a voter
// whose raft address does not answer.
func TestMDSRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a three-replica MDS group")
	}
	cl := testcluster.Start(t, 2, testcluster.WithMDS(3))
	ctx := testcluster.Context(t, 3*time.Minute)
	c := cl.Client()
	env := envOf(cl)

	// add refuses a voter that does not answer.
	dead := freeAddr(t)
	strata(t, env, "admin", "mds", "add", "mds9", dead).fails(t, 1, "nothing answers at raft address "+dead)
	if out := strata(t, env, "admin", "mds", "list").ok(t).stdout; strings.Contains(out, "mds9") || strings.Count(out, "\nmds") != 3 {
		t.Fatalf("after a refused add, mds list:\n%s", out)
	}

	// A mkdir caught in an election is retried by the client, and the MDS
	// keeps no reply cache: the retry may find the directory its first
	// try made (client/failover.go). What counts is that /keep is a
	// directory.
	if err := c.Mkdir(ctx, "/keep", 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
		t.Fatal(err)
	}
	if st, err := c.Stat(ctx, "/keep"); err != nil || !st.IsDir() {
		t.Fatalf("/keep after mkdir: %v, %v", st, err)
	}
	want := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("/keep/f%02d", i)
		data := bytes.Repeat([]byte{byte(i + 1)}, 1000+i*3000)
		// Acknowledged means written and closed without an error; a
		// write caught in an election (this machine may be slow) is
		// written again.
		pollUntil(t, "writing "+name, func() bool {
			f, err := c.OpenFile(ctx, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return false
			}
			_, err = f.WriteAt(data, 0)
			return errors.Join(err, f.Close()) == nil
		})
		want[name] = data
	}

	// The survivor: a follower that has applied everything the leader has.
	leader := cl.WaitLeader()
	lr, err := cl.MDSReplica(leader).Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	surv := (leader + 1) % 3
	var survRaft string
	for _, v := range lr.Voters {
		if v.ID == fmt.Sprintf("mds%d", surv+1) {
			survRaft = v.RaftAddr
		}
	}
	pollUntil(t, "the survivor to apply the leader's log", func() bool {
		r, err := cl.MDSReplica(surv).Cluster(ctx)
		return err == nil && r.Applied >= lr.Applied
	})
	for i := range 3 {
		if i != surv {
			if err := cl.StopMDSReplica(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Without a quorum nothing commits.
	shortCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	if err := c.Mkdir(shortCtx, "/lost", 0o755); err == nil {
		t.Fatal("mkdir succeeded on one voter of three")
	}
	cancel()

	if err := cl.StopMDSReplica(surv); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cl.Dir(), fmt.Sprintf("mds%d", surv+1))
	voter := fmt.Sprintf("mds%d=%s", surv+1, survRaft)
	out := strata(t, nil, "admin", "mds", "recover", "--dir", dir, "--voters", voter, "--dry-run").ok(t).stdout
	if !strings.Contains(out, "last raft index") {
		t.Fatalf("recover --dry-run printed %q", out)
	}
	out = strata(t, nil, "admin", "mds", "recover", "--dir", dir, "--voters", voter).ok(t).stdout
	if !strings.Contains(out, "recovered: the voters are now "+voter) {
		t.Fatalf("recover printed %q", out)
	}
	if err := cl.StartMDSReplica(ctx, surv); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the recovered replica to lead", func() bool { return cl.Leader() == surv })

	for name, data := range want {
		f, err := c.Open(ctx, name)
		if err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		got := make([]byte, len(data)+10)
		n, _ := f.ReadAt(got, 0)
		_ = f.Close()
		if !bytes.Equal(got[:n], data) {
			t.Fatalf("after recovery %s: %d bytes read, differ from the %d written", name, n, len(data))
		}
	}
	if err := c.Mkdir(ctx, "/after", 0o755); err != nil {
		t.Fatalf("mkdir after recovery: %v", err)
	}
	if out := strata(t, env, "admin", "mds", "list").ok(t).stdout; strings.Count(out, "\nmds") != 1 || !strings.Contains(out, "leader") {
		t.Fatalf("after recovery, mds list:\n%s", out)
	}
}

// pollUntil polls cond until it holds, or fails the test after a minute.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
