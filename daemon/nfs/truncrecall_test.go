package nfs_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const opSetattr = 34

// TestTruncateRecalls: an NFS client's SETATTR that cuts a file first
// recalls the layouts other clients hold of it and waits for them. The
// holder here has no backchannel, so it never answers: its layout is
// fenced at the data server before the cut is made, so that a late WRITE
// of the holder cannot grow the cut component again (those bytes would
// show through a later extension instead of zeros). Without the wait the
// fence came only a recall timeout (10 s) after the SETATTR had returned.
func TestTruncateRecalls(t *testing.T) {
	rig := nfstest.StartPNFSFront(t, 1, func(c *nfs.Config) { c.RecallTimeout = 10 * time.Second },
		testcluster.WithDefaultLayout("width=1,unit=1M,scheme=none"))
	c := rig.Cl.Client()
	data := nfsguest.Pattern(12, 2<<20)
	nfstest.WriteStrata(t, c, "/cut", data)

	holder := dialNFS(t, rig.Front.Addr())
	holder.sessionAs("holder")
	hfh := lookupFH(t, holder, "cut")
	layoutGet(t, holder, hfh, openFH(t, holder, hfh, "holder"))

	cutter := dialNFS(t, rig.Front.Addr())
	cutter.sessionAs("cutter")
	fh := lookupFH(t, cutter, "cut")
	sid := openFH(t, cutter, fh, "cutter")
	const size = 1 << 20
	onFile(t, cutter, fh, "SETATTR", op{opSetattr, func(x *xdr.Writer) {
		x.Fixed(sid)
		x.Bitmap([]uint32{1 << 4}) // FATTR4_SIZE
		b := xdr.NewWriter(nil)
		b.Uint64(size)
		x.Opaque(b.Bytes())
	}})
	recalled, fenced := rig.Front.RecallStats()
	fences, _ := rig.DS3[0].Fenced()
	if recalled < 1 || fenced < 1 || fences < 1 {
		t.Fatalf("when SETATTR returned: %d layouts recalled, %d fenced, %d fences at the data server; want the holder's recalled and fenced before the cut",
			recalled, fenced, fences)
	}
	got, err := nfstest.TryRead(testcluster.Context(t, time.Minute), c, "/cut")
	if err != nil || !bytes.Equal(got, data[:size]) {
		t.Fatalf("after the cut the client library reads %d bytes (%v), want the first %d written", len(got), err, size)
	}
}

// TestRestripeRecalls: a Strata client restripes an empty file (its
// layout xattr: a new generation) while an NFS client holds a layout of
// it; the MDS has the front end recall that layout, and fence it when the
// holder (no backchannel here) does not answer.
func TestRestripeRecalls(t *testing.T) {
	rig := nfstest.StartPNFSFront(t, 2, func(c *nfs.Config) { c.RecallTimeout = time.Second },
		testcluster.WithDefaultLayout("width=1,unit=1M,scheme=none"))
	c := rig.Cl.Client()
	ctx := testcluster.Context(t, 3*time.Minute)
	nfstest.WriteStrata(t, c, "/re", nil)

	holder := dialNFS(t, rig.Front.Addr())
	holder.sessionAs("holder")
	fh := lookupFH(t, holder, "re")
	layoutGet(t, holder, fh, openFH(t, holder, fh, "holder"))
	if err := c.SetXattr(ctx, "/re", rpc.LayoutXattr, []byte("width=2,unit=64K"), 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recalled, fenced := rig.Front.RecallStats()
		if recalled >= 1 && fenced >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after the restripe: %d layouts recalled, %d fenced; want the holder's recalled and fenced", recalled, fenced)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
