package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// letGoWait is how long a `strata mount` may take to end after its mount
// was unmounted (or it got SIGTERM) while its MDS has no leader: a Slurm
// epilog waits on it. Before the mount bounded what was in flight, it took
// 30 s and more (two MDS calls that each retry for 15 s).
const letGoWait = 20 * time.Second

// TestUmountNoLeader: two mounts hold files with unwritten data when the
// MDS group loses its quorum (3 voters, 2 killed). Closing them fails
// (the data cannot be committed), and then `strata umount` of one and
// SIGTERM of the other end their `strata mount` processes within seconds,
// though the kernel's RELEASE of each file is still retrying the MDS; each
// says in its log that it gave up on the MDS, and nothing stays mounted.
func TestUmountNoLeader(t *testing.T) {
	requireFUSE(t)
	if testing.Short() {
		t.Skip("-short: a three-replica MDS group")
	}
	cl := testcluster.Start(t, 2, testcluster.WithMDS(3))
	env := envOf(cl)
	dA, dirA := startMount(t, env)
	dB, dirB := startMount(t, env)
	var files []*os.File
	for _, dir := range []string{dirA, dirB} {
		f, err := os.Create(filepath.Join(dir, "unwritten"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	leader := cl.Leader()
	for i := range 3 {
		if i != (leader+1)%3 {
			if err := cl.StopMDSReplica(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	closeErrs := make([]error, len(files))
	for i, f := range files {
		wg.Add(1)
		go func() { defer wg.Done(); closeErrs[i] = f.Close() }()
	}
	wg.Wait()
	for i, err := range closeErrs {
		if err == nil {
			t.Errorf("close of file %d with no MDS leader succeeded: its size cannot have been committed", i)
		}
	}

	// SIGTERM to B, strata umount of A, while the kernel's RELEASEs of
	// the closed files are still trying the MDS.
	dB.cancel()
	dB.cancel = nil
	deadline := time.Now().Add(time.Minute)
	for {
		r := strata(t, nil, "umount", dirA)
		if r.code == 0 {
			break
		}
		if !strings.Contains(r.stderr, "target is busy") || time.Now().After(deadline) {
			t.Fatalf("strata umount: exit %d, %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, m := range []struct {
		name string
		d    *daemon
		dir  string
	}{{"umount", dA, dirA}, {"SIGTERM", dB, dirB}} {
		select {
		case err := <-m.d.done:
			if err != nil {
				t.Errorf("after %s with no MDS leader, strata mount returned %v; stderr:\n%s", m.name, err, m.d.err.String())
			}
		case <-time.After(letGoWait):
			t.Fatalf("after %s with no MDS leader, strata mount still runs %v later; stderr:\n%s", m.name, letGoWait, m.d.err.String())
		}
		m.d.cancel = nil
		if log := m.d.err.String(); !strings.Contains(log, "the MDS did not answer") || !strings.Contains(log, "gave up") {
			t.Errorf("after %s with no MDS leader, the log of strata mount does not say it gave up on the MDS:\n%s", m.name, log)
		}
		if isMounted(t, m.dir) {
			t.Errorf("after %s, %s is still mounted", m.name, m.dir)
		}
	}
}
