package mds

import (
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestGetattrMany: one MGetattrMany call answers each inode as its own
// MGetattr would (the attributes, ENOENT for an inode that does not
// exist), counts each as a getattr, and refuses too many inodes whole.
func TestGetattrMany(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	m.fakeDSes(1)
	d := must[rpc.AttrResp](m, rpc.MMkdir, &rpc.MkdirReq{Parent: rpc.RootIno, Name: "d", Mode: 0o750}).Attr
	f := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: d.Ino, Name: "f", Mode: 0o604, Exclusive: true}).Attr
	gets := m.met.named("getattr").total.Load()
	resp := must[rpc.GetattrManyResp](m, rpc.MGetattrMany, &rpc.GetattrManyReq{Inos: []uint64{f.Ino, 999999, d.Ino, rpc.RootIno}})
	if len(resp.Items) != 4 {
		t.Fatalf("%d results for 4 inodes", len(resp.Items))
	}
	for i, want := range []*rpc.Attr{&f, nil, &d, nil} {
		a, err := resp.Items[i].Result()
		switch {
		case i == 1:
			if errnoOf(err) != syscall.ENOENT {
				t.Errorf("inode 999999: %v, want ENOENT", err)
			}
		case err != nil:
			t.Errorf("item %d: %v", i, err)
		case i == 3:
			if a.Ino != rpc.RootIno || a.Mode&rpc.TypeMask != rpc.TypeDir {
				t.Errorf("root: %+v", a)
			}
		case a.Ino != want.Ino || a.Mode != want.Mode || a.Uid != want.Uid:
			t.Errorf("item %d: %+v, want %+v", i, a, want)
		}
	}
	if n := m.met.named("getattr").total.Load() - gets; n != 4 {
		t.Errorf("metrics count %d getattrs, want 4", n)
	}
	if _, err := call[rpc.GetattrManyResp](m, rpc.MGetattrMany, &rpc.GetattrManyReq{Inos: make([]uint64, rpc.MaxGetattrMany+1)}); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("%d inodes: %v, want EINVAL", rpc.MaxGetattrMany+1, err)
	}
}
