package nfstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// PNFS is a cluster with the NFSv3 service on each data server, a
// counting proxy in front of every NFS port, and the forwards the guest
// needs: data server i is 10.0.2.(101+i):2049 to the guest.
type PNFS struct {
	Cl    *testcluster.Cluster
	Front *nfs.Server
	DS3   []*ds3.Server
	MDSPx *Proxy
	DSPx  []*Proxy
	Fwd   []nfsguest.Forward
}

// StartPNFS starts it with nds data servers.
func StartPNFS(t testing.TB, nds int, opts ...testcluster.Option) *PNFS {
	t.Helper()
	return StartPNFSFront(t, nds, nil, opts...)
}

// StartPNFSFront is StartPNFS with change adjusting the front end's
// config. The MDS tells the front end of moves (recalls), and the front
// end fences at the data servers' own NFS addresses.
func StartPNFSFront(t testing.TB, nds int, change func(*nfs.Config), opts ...testcluster.Option) *PNFS {
	t.Helper()
	relay := &nfs.Relay{}
	cl := testcluster.Start(t, nds, append(opts, testcluster.WithRecall(relay))...)
	rig := &PNFS{Cl: cl}
	dsMap, fenceMap := map[string]string{}, map[string]string{}
	for i := range nds {
		s, err := ds3.New(ds3.Config{Addr: "127.0.0.1:0", DSAddr: cl.DSAddr(i), Secret: cl.Secret(), Size: ds3.SizeFrom(cl.Client())}, Log())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		px := StartProxy(t, s.Addr())
		guestAddr := fmt.Sprintf("10.0.2.%d:2049", 101+i)
		dsMap[cl.DSAddr(i)] = guestAddr
		fenceMap[cl.DSAddr(i)] = s.Addr()
		rig.DS3 = append(rig.DS3, s)
		rig.DSPx = append(rig.DSPx, px)
		rig.Fwd = append(rig.Fwd, nfsguest.Forward{Guest: guestAddr, Host: px.Addr()})
	}
	rig.Front = StartFront(t, cl, func(c *nfs.Config) {
		c.DataServers, c.FenceAddrs = dsMap, fenceMap
		if change != nil {
			change(c)
		}
	})
	relay.Set(rig.Front)
	rig.MDSPx = StartProxy(t, rig.Front.Addr())
	return rig
}

// Options returns guest options for this rig.
func (r *PNFS) Options(vers string, args ...string) nfsguest.Options {
	return nfsguest.Options{Server: r.MDSPx.Addr(), MountOpt: "vers=" + vers, Args: args, Forwards: r.Fwd}
}

// DSIn is the bytes clients sent to all data servers' NFS ports.
func (r *PNFS) DSIn() int64 {
	var n int64
	for _, p := range r.DSPx {
		n += p.In()
	}
	return n
}

// DSEach is the bytes clients sent to each data server's NFS port.
func (r *PNFS) DSEach() []int64 {
	var out []int64
	for _, p := range r.DSPx {
		out = append(out, p.In())
	}
	return out
}

// DSAt returns the index of the data server whose RPC address is addr;
// the test fails if there is none.
func (r *PNFS) DSAt(t testing.TB, addr string) int {
	t.Helper()
	for i := range r.Cl.NumDS() {
		if r.Cl.DSAddr(i) == addr {
			return i
		}
	}
	t.Fatalf("no data server at %s", addr)
	return -1
}
