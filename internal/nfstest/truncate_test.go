package nfstest_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestKernelTruncate: the kernel client wrote a striped file over pNFS
// and holds it open for reading (a read layout, its pages cached) when a
// Strata client cuts it from 6 MiB to 1 MiB. The MDS has the front end recall
// the kernel's layout (CB_LAYOUTRECALL), which the kernel returns; its
// next open sees 1 MiB holding the first MiB written and its open
// descriptor reads nothing past it. Once the Strata client extends the
// file to 6 MiB again, the kernel reads zeros past the cut, never the
// bytes it wrote there before.
func TestKernelTruncate(t *testing.T) {
	g := nfstest.Guest(t)
	rig := nfstest.StartPNFSFront(t, 3, func(c *nfs.Config) {
		c.RecallTimeout = 5 * time.Minute // the kernel answers: no fencing, however slow the guest
	}, testcluster.WithDefaultLayout("width=3,unit=1M,scheme=none"))
	c := rig.Cl.Client()
	ctx := testcluster.Context(t, 9*time.Minute)

	run := nfstest.Start(ctx, g, rig.Options("4.2", "cut"))
	run.WaitMarker(t, ctx, c, "/cut-marker", "started", 6*time.Minute)
	before, _ := rig.Front.RecallStats()
	if err := c.Truncate(ctx, "/cut.bin", 1<<20); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recalled, _ := rig.Front.RecallStats()
		if recalled > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut did not recall the layout the kernel holds within 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	nfstest.WriteStrata(t, c, "/cut-marker", []byte("cut"))
	run.WaitMarker(t, ctx, c, "/cut-marker", "read-cut", 6*time.Minute)
	if err := c.Truncate(ctx, "/cut.bin", 6<<20); err != nil {
		t.Fatal(err)
	}
	want := append(nfsguest.Pattern(6, 1<<20), make([]byte, 5<<20)...)
	if got := nfstest.ReadStrata(t, c, "/cut.bin"); !bytes.Equal(got, want) {
		t.Errorf("the client library reads %d bytes, not the first MiB written and 5 MiB of zeros", len(got))
	}
	nfstest.WriteStrata(t, c, "/cut-marker", []byte("extended"))
	run.Check(t)

	if _, fenced := rig.Front.RecallStats(); fenced != 0 {
		t.Errorf("the kernel returned its layout, yet %d layout(s) were fenced", fenced)
	}
	if got := nfstest.ReadStrata(t, c, "/cut.bin"); !bytes.Equal(got, want) {
		t.Fatalf("after the guest's reads the client library reads %d bytes, not the first MiB written and 5 MiB of zeros", len(got))
	}
}
