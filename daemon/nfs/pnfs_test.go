package nfs_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// pnfsRig is a cluster with the NFSv3 service on each data server, a
// counting proxy in front of every NFS port, and the forwards the guest
// needs: data server i is 10.0.2.(101+i):2049 to the guest.
type pnfsRig struct {
	cl    *testcluster.Cluster
	front *nfs.Server
	ds3   []*ds3.Server
	mdsPx *countingProxy
	dsPx  []*countingProxy
	fwd   []nfsguest.Forward
}

func startPNFS(t *testing.T, nds int, opts ...testcluster.Option) *pnfsRig {
	t.Helper()
	cl := testcluster.Start(t, nds, opts...)
	rig := &pnfsRig{cl: cl}
	dsMap := map[string]string{}
	for i := range nds {
		s, err := ds3.New(ds3.Config{Addr: "127.0.0.1:0", DSAddr: cl.DSAddr(i), Secret: cl.Secret()}, testLog())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		px := startProxy(t, s.Addr())
		guestAddr := fmt.Sprintf("10.0.2.%d:2049", 101+i)
		dsMap[cl.DSAddr(i)] = guestAddr
		rig.ds3 = append(rig.ds3, s)
		rig.dsPx = append(rig.dsPx, px)
		rig.fwd = append(rig.fwd, nfsguest.Forward{Guest: guestAddr, Host: px.Addr()})
	}
	rig.front = startFront(t, cl, func(c *nfs.Config) { c.DataServers = dsMap })
	rig.mdsPx = startProxy(t, rig.front.Addr())
	return rig
}

func (r *pnfsRig) run(t *testing.T, ctx context.Context, vers string, args ...string) *nfsguest.Result {
	t.Helper()
	res, err := kernelGuest(t).Run(ctx, nfsguest.Options{
		Server: r.mdsPx.Addr(), MountOpt: "vers=" + vers, Args: args, Forwards: r.fwd,
	})
	checkGuest(t, res, err)
	return res
}

// mountstat returns the count of op in the guest's mountstats.
func mountstat(res *nfsguest.Result, op string) int {
	for _, l := range res.Grep("mountstats:") {
		f := strings.Fields(strings.TrimPrefix(l, "mountstats:"))
		if len(f) > 1 && f[0] == op+":" {
			var n int
			fmt.Sscan(f[1], &n)
			return n
		}
	}
	return -1
}

// TestKernelPNFS: the kernel client gets flex-files layouts for a striped
// file and moves its data straight to the data servers' NFS ports; what
// it wrote reads back whole through the client library.
func TestKernelPNFS(t *testing.T) {
	kernelGuest(t)
	rig := startPNFS(t, 3, testcluster.WithDefaultLayout("width=3,unit=1M,scheme=none"))
	for _, vers := range []string{"4.1", "4.2"} {
		t.Run("vers="+vers, func(t *testing.T) {
			ctx := testcluster.Context(t, 5*time.Minute)
			mds0, ds0 := rig.mdsPx.In(), rig.dsIn()
			const mib = 16
			res := rig.run(t, ctx, vers, "bigio", fmt.Sprint(mib))
			ms := strings.Join(res.Grep("mountstats:"), "\n")
			if !strings.Contains(ms, "pnfs=LAYOUT_FLEX_FILES") {
				t.Errorf("mountstats do not show the flex-files layout driver:\n%s", ms)
			}
			if n := mountstat(res, "LAYOUTGET"); n <= 0 {
				t.Errorf("LAYOUTGET count %d in mountstats", n)
			}
			c := rig.cl.Client()
			got := readStrata(t, c, "/big.bin")
			want := bytes.Repeat(nfsguest.Pattern(3, 1<<20), mib)
			if !bytes.Equal(got, want) {
				t.Fatalf("the client library reads %d bytes of the %d the kernel wrote over pNFS, or they differ", len(got), len(want))
			}
			mdsIn, dsIn := rig.mdsPx.In()-mds0, rig.dsIn()-ds0
			t.Logf("bytes sent by the kernel client: MDS port %d, data server ports %v", mdsIn, rig.dsEach())
			if dsIn < mib<<20 {
				t.Errorf("the data servers' NFS ports received %d bytes for a %d MiB file", dsIn, mib)
			}
			if mdsIn > 1<<20 {
				t.Errorf("the MDS port received %d bytes: the data went through the MDS", mdsIn)
			}
			for i, px := range rig.dsPx {
				if px.In() < 1<<20 {
					t.Errorf("data server %d's NFS port received %d bytes: the file is not striped over it", i, px.In())
				}
			}
		})
	}
}

func (r *pnfsRig) dsIn() int64 {
	var n int64
	for _, p := range r.dsPx {
		n += p.In()
	}
	return n
}

func (r *pnfsRig) dsEach() []int64 {
	var out []int64
	for _, p := range r.dsPx {
		out = append(out, p.In())
	}
	return out
}
