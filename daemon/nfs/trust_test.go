package nfs_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestTrustedHosts: exports trust clients the way the identity layer
// does (Config.Nodemap). The export allows 127.0.0.1 without root squash;
// root creating a directory from there owns it when 127.0.0.0/8 is a
// trusted network, and is squashed to nobody when only 10.0.0.0/8 is —
// and then cannot create in a directory only root may write.
func TestTrustedHosts(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	if err := c.Mkdir(ctx, "/open", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := c.Chmod(ctx, "/open", 0o777); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir(ctx, "/rootonly", 0o755); err != nil {
		t.Fatal(err)
	}
	const opCreate = 6
	mkdir := func(w *wireClient, dir, name string) uint32 {
		st, _, _ := w.compound(1, w.seqOp(), op{opPutrootfh, nil},
			op{opLookup, func(w *xdr.Writer) { w.String(dir) }},
			op{opCreate, func(w *xdr.Writer) {
				w.Uint32(2) // NF4DIR
				w.String(name)
				w.Uint32(0) // no attributes
				w.Uint32(0)
			}})
		return st
	}
	for _, tc := range []struct {
		name    string
		trusted string
		uid     uint32
	}{
		{"trusted", "127.0.0.0/8", 0},
		{"untrusted", "10.0.0.0/8", 65534},
	} {
		t.Run(tc.name, func(t *testing.T) {
			front := nfstest.StartFront(t, cl, func(c *nfs.Config) {
				c.Nodemap.Trusted = []netip.Prefix{netip.MustParsePrefix(tc.trusted)}
			})
			w := dialNFS(t, front.Addr())
			w.session()
			if st := mkdir(w, "open", tc.name); st != 0 {
				t.Fatalf("CREATE /open/%s as root: status %d", tc.name, st)
			}
			a, err := c.Stat(ctx, "/open/"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if a.Uid != tc.uid {
				t.Errorf("root from 127.0.0.1 with trusted networks %s made a directory owned by uid %d, want %d", tc.trusted, a.Uid, tc.uid)
			}
			const nfs4errAccess = 13
			want := map[uint32]uint32{0: 0, 65534: nfs4errAccess}[tc.uid]
			if st := mkdir(w, "rootonly", tc.name); st != want {
				t.Errorf("CREATE in root's 0755 directory: status %d, want %d", st, want)
			}
		})
	}
}
