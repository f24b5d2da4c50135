package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
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
	cl := testcluster.Start(t, 2, testcluster.WithMDS(3), notInline)
	env := envOf(cl)
	dA, dirA := startMount(t, env)
	dB, dirB := startMount(t, env)
	files := openUnwritten(t, dirA, dirB)

	leader := cl.WaitLeader()
	for i := range 3 {
		if i != (leader+1)%3 {
			if err := cl.StopMDSReplica(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeFailing(t, files)

	// SIGTERM to B, strata umount of A, while the kernel's RELEASEs of
	// the closed files are still trying the MDS.
	dB.cancel()
	dB.cancel = nil
	umountBusy(t, dirA)
	letGo(t, "umount", dA, dirA)
	letGo(t, "SIGTERM", dB, dirB)
}

// TestUmountNoMDS: the same with a cluster of one MDS, killed: closing a
// file with unwritten data fails, and `strata umount` then ends the
// `strata mount` process within seconds.
func TestUmountNoMDS(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 2, notInline)
	env := envOf(cl)
	d, dir := startMount(t, env)
	files := openUnwritten(t, dir)
	if err := cl.StopMDS(); err != nil {
		t.Fatal(err)
	}
	closeFailing(t, files)
	umountBusy(t, dir)
	letGo(t, "umount", d, dir)
}

// notInline makes files on the data servers from their creation: the
// tests want a RELEASE that retries the MDS (its layout return) while the
// mount is let go, which an inline file's writer does not make (its close
// fails at once: its bytes cannot move to the data servers).
var notInline = testcluster.WithMDSConfig(func(c *mds.Config) { c.InlineMax = 0 })

// openUnwritten creates a file in each dir and writes 1 MiB to it, which
// the mount holds until the file is closed.
func openUnwritten(t *testing.T, dirs ...string) []*os.File {
	t.Helper()
	var files []*os.File
	for _, dir := range dirs {
		f, err := os.Create(filepath.Join(dir, "unwritten"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// closeFailing closes files at once and fails the test if one of them
// closes without error: with no MDS leader their sizes cannot be
// committed.
func closeFailing(t *testing.T, files []*os.File) {
	t.Helper()
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
}

// umountBusy runs `strata umount dir` until it is not refused as busy
// (the kernel may still hold the closed files' RELEASEs), for a minute.
func umountBusy(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := strata(t, nil, "umount", dir)
		if r.code == 0 {
			return
		}
		if !strings.Contains(r.stderr, "target is busy") || time.Now().After(deadline) {
			t.Fatalf("strata umount: exit %d, %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// letGo fails the test unless the mount d of dir, unmounted or told to
// stop (how), ends within letGoWait with no error, saying in its log that
// it gave up on the MDS, and dir is no longer mounted.
func letGo(t *testing.T, how string, d *daemon, dir string) {
	t.Helper()
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("after %s with no MDS leader, strata mount returned %v; stderr:\n%s", how, err, d.err.String())
		}
	case <-time.After(letGoWait):
		t.Fatalf("after %s with no MDS leader, strata mount still runs %v later; stderr:\n%s", how, letGoWait, d.err.String())
	}
	d.cancel = nil
	if log := d.err.String(); !strings.Contains(log, "the MDS did not answer") || !strings.Contains(log, "gave up") {
		t.Errorf("after %s with no MDS leader, the log of strata mount does not say it gave up on the MDS:\n%s", how, log)
	}
	if isMounted(t, dir) {
		t.Errorf("after %s, %s is still mounted", how, dir)
	}
}
