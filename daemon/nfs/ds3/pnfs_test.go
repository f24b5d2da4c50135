package ds3_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestKernelPNFS: the kernel client gets flex-files layouts for a striped
// file and moves its data straight to the data servers' NFS ports; what
// it wrote reads back whole through the client library.
func TestKernelPNFS(t *testing.T) {
	g := nfstest.Guest(t)
	rig := nfstest.StartPNFS(t, 3, testcluster.WithDefaultLayout("width=3,unit=1M,scheme=none"))
	// vers=4.1 here; TestKernelMirror (internal/nfstest) does pNFS with
	// 4.2, and TestKernelClient mounts both: one boot per package keeps it
	// inside the package timeout on a loaded machine.
	for _, vers := range []string{"4.1"} {
		t.Run("vers="+vers, func(t *testing.T) {
			ctx := testcluster.Context(t, 5*time.Minute)
			mds0, ds0 := rig.MDSPx.In(), rig.DSIn()
			const mib = 6
			res, err := g.Run(ctx, rig.Options(vers, "bigio", fmt.Sprint(mib)))
			nfstest.CheckGuest(t, res, err)
			ms := strings.Join(res.Grep("mountstats:"), "\n")
			if !strings.Contains(ms, "pnfs=LAYOUT_FLEX_FILES") {
				t.Errorf("mountstats do not show the flex-files layout driver:\n%s", ms)
			}
			if n := nfstest.Mountstat(res, "LAYOUTGET"); n <= 0 {
				t.Errorf("LAYOUTGET count %d in mountstats", n)
			}
			c := rig.Cl.Client()
			got := nfstest.ReadStrata(t, c, "/big.bin")
			want := bytes.Repeat(nfsguest.Pattern(3, 1<<20), mib)
			if !bytes.Equal(got, want) {
				t.Fatalf("the client library reads %d bytes of the %d the kernel wrote over pNFS, or they differ", len(got), len(want))
			}
			mdsIn, dsIn := rig.MDSPx.In()-mds0, rig.DSIn()-ds0
			t.Logf("bytes sent by the kernel client: MDS port %d, data server ports %v", mdsIn, rig.DSEach())
			if dsIn < mib<<20 {
				t.Errorf("the data servers' NFS ports received %d bytes for a %d MiB file", dsIn, mib)
			}
			if mdsIn > 1<<20 {
				t.Errorf("the MDS port received %d bytes: the data went through the MDS", mdsIn)
			}
			for i, px := range rig.DSPx {
				if px.In() < 1<<20 {
					t.Errorf("data server %d's NFS port received %d bytes: the file is not striped over it", i, px.In())
				}
			}
		})
	}
}
