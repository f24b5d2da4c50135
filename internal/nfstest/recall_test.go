package nfstest_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestKernelRecall: the kernel client holds /move.bin open for writing
// with a pNFS layout on one data server, which is then drained. The
// MDS's rebuild manager cannot move a file's component while a client
// may write it, so it has the front end recall the layout
// (CB_LAYOUTRECALL).
//
//   - returns: the kernel answers the recall and returns the layout; the
//     component moves without any fencing, and the rest of the file the
//     kernel writes goes to the new data server.
//   - fenced: the recall never reaches the kernel (a proxy drops the
//     backchannel's calls). After the recall timeout the front end fences
//     the layout: the old data server refuses its identity and the move
//     goes on. The kernel's next write to the old data server is refused
//     (NFS3ERR_ACCES), it gets a new layout and writes to the new one;
//     had it not been fenced, that write would have gone to the
//     abandoned copy and been lost.
//
// Either way the whole file reads back right through the client library
// and in the guest.
func TestKernelRecall(t *testing.T) {
	g := nfstest.Guest(t)
	for _, answer := range []bool{true, false} {
		name := map[bool]string{true: "returns", false: "fenced"}[answer]
		t.Run(name, func(t *testing.T) { kernelMove(t, g, answer) })
	}
}

func kernelMove(t *testing.T, g *nfsguest.Guest, answer bool) {
	recallTimeout := 5 * time.Second
	if answer {
		recallTimeout = 5 * time.Minute // the kernel answers: no fencing, however slow the guest
	}
	rig := nfstest.StartPNFSFront(t, 3, func(c *nfs.Config) {
		c.RecallTimeout = recallTimeout
		c.Lease = time.Minute
	}, testcluster.WithDefaultLayout("width=1,unit=1M,scheme=none"),
		testcluster.WithMDSConfig(func(c *mds.Config) { c.RebuildDelay = 2 * time.Second }))
	c := rig.Cl.Client()
	ctx := testcluster.Context(t, 14*time.Minute)

	run := nfstest.Start(ctx, g, rig.Options("4.1", "move"))
	run.WaitMarker(t, ctx, c, "/mv-marker", "started", 6*time.Minute)
	deadline := time.Now().Add(6 * time.Minute)
	info, err := c.GetLayout(ctx, "/move.bin")
	if err != nil {
		t.Fatal(err)
	}
	from, fromAddr := info.Layout.Targets[0], info.Addrs[0]
	old := rig.DSAt(t, fromAddr)
	if !answer {
		rig.MDSPx.DropCallbacks(true)
	}
	if _, err := c.DrainDS(ctx, from, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("draining %s (%s), which holds /move.bin", from, fromAddr)
	for {
		info, err = c.GetLayout(ctx, "/move.bin")
		if err == nil && !slices.Contains(info.Addrs, fromAddr) {
			break
		}
		if time.Now().After(deadline.Add(5 * time.Minute)) {
			st, _ := c.RebuildStatus(ctx)
			t.Fatalf("/move.bin was not moved off the drained data server: layout %+v, %v; rebuilds %+v", info, err, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	recalled, fenced := rig.Front.RecallStats()
	t.Logf("moved to %v; layouts recalled %d, fenced %d; callbacks dropped %d", info.Addrs, recalled, fenced, rig.MDSPx.DroppedCallbacks())
	if recalled == 0 {
		t.Errorf("the component moved but no layout was recalled")
	}
	if answer && fenced != 0 {
		t.Errorf("the kernel answered the recall, yet %d layout(s) were fenced", fenced)
	}
	if !answer && (fenced == 0 || rig.MDSPx.DroppedCallbacks() == 0) {
		t.Errorf("fenced %d layouts after %d dropped callbacks; want both > 0", fenced, rig.MDSPx.DroppedCallbacks())
	}
	rig.MDSPx.DropCallbacks(false)
	newIdx := rig.DSAt(t, info.Addrs[0])
	newIn := rig.DSPx[newIdx].In()
	nfstest.WriteStrata(t, c, "/mv-marker", []byte("moved"))
	run.Check(t)

	want := nfsguest.Pattern(5, 6<<20)
	if got := nfstest.ReadStrata(t, c, "/move.bin"); !bytes.Equal(got, want) {
		t.Fatalf("the client library reads %d bytes, not the %d written, or they differ", len(got), len(want))
	}
	if n := rig.DSPx[newIdx].In() - newIn; n < 3<<20 {
		t.Errorf("the new data server's NFS port received %d bytes after the move, not the second half", n)
	}
	_, refused := rig.DS3[old].Fenced()
	t.Logf("calls the old data server refused as fenced: %d", refused)
	if !answer && refused == 0 {
		t.Errorf("the old data server never refused the fenced layout's identity")
	}
}
