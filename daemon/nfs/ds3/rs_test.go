package ds3_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
	"github.com/strata-hpc/strata/layout"
)

// TestKernelRS: an rs:2+1 file gets no layout (the kernel cannot compute
// parity), so the kernel client writes and reads it through the front
// end, which uses the client library: none of its bytes go to the data
// servers' NFS ports, and what it wrote is byte for byte what
// `strata cat` prints.
func TestKernelRS(t *testing.T) {
	g := nfstest.Guest(t)
	rig := nfstest.StartPNFS(t, 3, testcluster.WithDefaultLayout("unit=64K,scheme=rs:2+1"))
	ctx := testcluster.Context(t, 8*time.Minute)
	const mib = 4
	res, err := g.Run(ctx, rig.Options("4.2", "bigio", "4"))
	nfstest.CheckGuest(t, res, err)
	want := bytes.Repeat(nfsguest.Pattern(3, 1<<20), mib)
	if got := nfstest.StrataCat(t, rig.Cl, "/big.bin"); !bytes.Equal(got, want) {
		t.Fatalf("strata cat prints %d bytes, not the %d the kernel wrote, or they differ", len(got), len(want))
	}
	info, err := rig.Cl.Client().GetLayout(ctx, "/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("layout %s; bytes sent by the kernel: MDS port %d, data server ports %v", info.Spec, rig.MDSPx.In(), rig.DSEach())
	if info.Layout.Scheme.Kind != layout.KindRS {
		t.Fatalf("/big.bin has layout %q, not rs", info.Spec)
	}
	if n := rig.DSIn(); n != 0 {
		t.Errorf("the data servers' NFS ports received %d bytes for an rs file", n)
	}
	if n := rig.MDSPx.In(); n < mib<<20 {
		t.Errorf("the front end received %d bytes, less than the %d MiB written through it", n, mib)
	}
}
