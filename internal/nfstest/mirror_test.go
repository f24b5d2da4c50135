package nfstest_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestKernelMirror: the kernel client writes a mirror:2 file over pNFS
// (every copy itself); one data server is killed between the two halves
// of the write. The write completes, the lost copy is marked stale and
// rebuilt on the third data server, and the file reads back whole, in the
// guest and through the client library.
func TestKernelMirror(t *testing.T) {
	g := nfstest.Guest(t)
	rig := nfstest.StartPNFS(t, 3, testcluster.WithDefaultLayout("width=1,unit=1M,scheme=mirror:2"),
		testcluster.WithMDSConfig(func(c *mds.Config) { c.RebuildDelay = 2 * time.Second }))
	c := rig.Cl.Client()
	ctx := testcluster.Context(t, 9*time.Minute)

	// Under qemu's user networking a dead data server looks like a
	// connection that closes, not a refused one: these make the client
	// give up on it in seconds instead of minutes (docs/nfs.md, failover).
	o := rig.Options("4.2", "mirror")
	o.ModuleParams = []string{"nfs_layout_flexfiles.dataserver_timeo=30", "nfs_layout_flexfiles.dataserver_retrans=1", "nfs_layout_flexfiles.io_maxretrans=2"}
	run := nfstest.Start(ctx, g, o)
	run.WaitMarker(t, ctx, c, "/mw-marker", "started", 6*time.Minute)
	deadline := time.Now().Add(6 * time.Minute)
	info, err := c.GetLayout(ctx, "/mirror.bin")
	if err != nil {
		t.Fatal(err)
	}
	victim := rig.DSAt(t, info.Addrs[0])
	killed := rig.Cl.DSAddr(victim)
	if err := rig.Cl.StopDS(victim); err != nil {
		t.Fatal(err)
	}
	_ = rig.DS3[victim].Close()
	t.Logf("killed data server %d (%s) holding copy 0 of /mirror.bin", victim, killed)
	nfstest.WriteStrata(t, c, "/mw-marker", []byte("killed"))
	run.Check(t)

	want := nfsguest.Pattern(4, 6<<20)
	if got := nfstest.ReadStrata(t, c, "/mirror.bin"); !bytes.Equal(got, want) {
		t.Fatalf("the client library reads %d bytes, not the %d written, or they differ", len(got), len(want))
	}
	// The lost copy is rebuilt elsewhere; then the file reads whole from
	// the new copies while the killed data server stays down.
	for {
		info, err = c.GetLayout(ctx, "/mirror.bin")
		if err == nil && len(info.Stale) == 0 && !slices.Contains(info.Addrs, killed) {
			break
		}
		if time.Now().After(deadline.Add(2 * time.Minute)) {
			t.Fatalf("the copy on the killed data server was not rebuilt: layout %+v, %v", info, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := nfstest.ReadStrata(t, c, "/mirror.bin"); !bytes.Equal(got, want) {
		t.Fatalf("after the rebuild the client library reads %d bytes, not the %d written, or they differ", len(got), len(want))
	}
}
