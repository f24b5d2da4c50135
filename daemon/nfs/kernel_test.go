package nfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestKernelClient mounts the front end from the Linux 6.1 kernel client
// (qemu) with vers=4.1 and vers=4.2: files written through NFS read back
// byte for byte through the client library and a FUSE mount, and files
// written through Strata read back in the guest. A FIFO the guest makes
// is a FIFO to the client library; on 4.2 a user xattr the guest sets
// (setxattr, RFC 8276) is the client library's, and a file the guest
// fallocates (ALLOCATE) reads 1 MiB of zeros.
func TestKernelClient(t *testing.T) {
	g := nfstest.Guest(t)
	cl := testcluster.Start(t, 3, testcluster.WithDefaultLayout("width=2,unit=64K,scheme=none"))
	front := nfstest.StartFront(t, cl, nil)
	c := cl.Client()
	fuseDir := nfstest.MountFUSE(t, cl)
	for _, vers := range []string{"4.1", "4.2"} {
		t.Run("vers="+vers, func(t *testing.T) {
			ctx := testcluster.Context(t, 5*time.Minute)
			nfstest.WriteStrata(t, c, "/from-host.bin", nfsguest.Pattern(2, 2<<20+7))
			res, err := g.Run(ctx, nfsguest.Options{Server: front.Addr(), MountOpt: "vers=" + vers, Args: []string{"basic"}})
			nfstest.CheckGuest(t, res, err)
			want := nfsguest.Pattern(1, 3<<20+123)
			if got := nfstest.ReadStrata(t, c, "/nfsdir/from-nfs.bin"); !bytes.Equal(got, want) {
				t.Errorf("client library reads %d bytes of the file NFS wrote, not the %d written", len(got), len(want))
			}
			got, err := os.ReadFile(filepath.Join(fuseDir, "nfsdir", "from-nfs.bin"))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("FUSE reads %d bytes (%v) of the file NFS wrote, not the %d written", len(got), err, len(want))
			}
			if got := nfstest.ReadStrata(t, c, "/nfsdir/renamed"); string(got) != "hello" {
				t.Errorf("client library reads %q from the renamed, truncated file", got)
			}
			if a, err := c.Stat(ctx, "/nfsdir/fifo"); err != nil || a.Mode&rpc.TypeMask != rpc.TypeFifo || a.Mode&0o777 != 0o640 {
				t.Errorf("the FIFO the guest made: %+v, %v; want a FIFO of mode 640", a, err)
			}
			if vers == "4.2" {
				if v, err := c.GetXattr(ctx, "/nfsdir/renamed", "user.color"); err != nil || string(v) != "blue" {
					t.Errorf("the client library reads user.color %q, %v; the guest set it to blue", v, err)
				}
				if got := nfstest.ReadStrata(t, c, "/nfsdir/alloc"); !bytes.Equal(got, make([]byte, 1<<20)) {
					t.Errorf("the client library reads %d bytes of the file the guest fallocated, not 1 MiB of zeros", len(got))
				}
			}
			ms := strings.Join(res.Grep("mountstats:"), "\n")
			if !strings.Contains(ms, "vers="+vers) {
				t.Errorf("mountstats do not show vers=%s:\n%s", vers, ms)
			}
		})
		// the next version's guest creates the same names
		if err := os.RemoveAll(filepath.Join(fuseDir, "nfsdir")); err != nil {
			t.Fatal(err)
		}
	}
}
