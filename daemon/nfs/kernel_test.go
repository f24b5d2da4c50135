package nfs_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

func writeStrata(t *testing.T, c *client.Client, name string, data []byte) {
	t.Helper()
	ctx := testcluster.Context(t, time.Minute)
	f, err := c.Create(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readStrata(t *testing.T, c *client.Client, name string) []byte {
	t.Helper()
	ctx := testcluster.Context(t, time.Minute)
	f, err := c.Open(ctx, name)
	if err != nil {
		t.Fatalf("open %s through the client library: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mountFUSE(t *testing.T, cl *testcluster.Cluster) string {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("no /dev/fuse: %v", err)
	}
	dir := t.TempDir()
	opts := fuse.DefaultOptions()
	opts.Log = testLog()
	s, err := fuse.Mount(context.Background(), cl.Client(), dir, opts)
	if err != nil {
		t.Fatalf("fuse mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Unmount(ctx, true)
	})
	return dir
}

func checkGuest(t *testing.T, res *nfsguest.Result, err error) {
	t.Helper()
	for _, l := range res.Lines {
		t.Log(l)
	}
	if err != nil {
		t.Fatalf("guest: %v\n%s", err, res.Console)
	}
	if !res.Has("MOUNT OK") {
		t.Fatalf("the kernel client did not mount:\n%s", res.Console)
	}
	if f := res.Grep("FAIL"); len(f) > 0 {
		t.Errorf("guest steps failed: %q", f)
	}
	if !res.Has("EXIT 0") {
		t.Errorf("guest program did not exit 0")
	}
}

// TestKernelClient mounts the front end from the Linux 6.1 kernel client
// (qemu) with vers=4.1 and vers=4.2: files written through NFS read back
// byte for byte through the client library and a FUSE mount, and files
// written through Strata read back in the guest.
func TestKernelClient(t *testing.T) {
	g := kernelGuest(t)
	cl := testcluster.Start(t, 3, testcluster.WithDefaultLayout("width=2,unit=64K,scheme=none"))
	front := startFront(t, cl, nil)
	c := cl.Client()
	fuseDir := mountFUSE(t, cl)
	for _, vers := range []string{"4.1", "4.2"} {
		t.Run("vers="+vers, func(t *testing.T) {
			ctx := testcluster.Context(t, 5*time.Minute)
			writeStrata(t, c, "/from-host.bin", nfsguest.Pattern(2, 2<<20+7))
			res, err := g.Run(ctx, nfsguest.Options{Server: front.Addr(), MountOpt: "vers=" + vers, Args: []string{"basic"}})
			checkGuest(t, res, err)
			want := nfsguest.Pattern(1, 3<<20+123)
			if got := readStrata(t, c, "/nfsdir/from-nfs.bin"); !bytes.Equal(got, want) {
				t.Errorf("client library reads %d bytes of the file NFS wrote, not the %d written", len(got), len(want))
			}
			got, err := os.ReadFile(filepath.Join(fuseDir, "nfsdir", "from-nfs.bin"))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("FUSE reads %d bytes (%v) of the file NFS wrote, not the %d written", len(got), err, len(want))
			}
			if got := readStrata(t, c, "/nfsdir/renamed"); string(got) != "hello" {
				t.Errorf("client library reads %q from the renamed, truncated file", got)
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
