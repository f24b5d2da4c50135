package permtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestMDSIsTheAuthority: the kernel's check on a mount (default_permissions)
// uses attributes it cached; when they are stale, the MDS still refuses what
// the file's current mode does not allow. A file another client made
// private is not writable through a mount that saw it world-writable an
// hour's cache ago.
func TestMDSIsTheAuthority(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: needs root (test accounts, setpriv): NOTHING WAS TESTED")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("SKIPPING: /dev/fuse is missing (%v): NOTHING WAS TESTED", err)
	}
	grp, callers := accounts(t)
	own, oth := callers[0], callers[2]
	base, err := os.MkdirTemp("", "strata-permtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyBinary(t, base)
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	cl := testcluster.Start(t, 1)
	opts := fuse.DefaultOptions()
	opts.AttrTimeout, opts.EntryTimeout = time.Hour, time.Hour
	srv, err := fuse.Mount(context.Background(), cl.Client(), mnt, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Unmount(ctx, true); err != nil && !errors.Is(err, fuse.ErrDetached) {
			t.Errorf("unmount: %v", err)
		}
	})
	x := filepath.Join(mnt, "x")
	if err := build(x, fixCase{"open", 0o777, 0o666}, own.uid, grp); err != nil {
		t.Fatal(err)
	}
	// The kernel caches the attributes (0666 files in a 0777 directory).
	for _, p := range append(prefix(filepath.Join(x, "d"), files), filepath.Join(x, "d")) {
		if _, err := os.Lstat(p); err != nil {
			t.Fatal(err)
		}
	}
	// Another client makes everything private; the mount's cache still
	// says otherwise for an hour.
	ctx := testcluster.Context(t, time.Minute)
	root := cl.Client()
	for _, f := range files {
		if err := root.Chmod(ctx, "/x/d/"+f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.Chmod(ctx, "/x/d", 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(x, "d", "f_xuser"), &st); err != nil || st.Mode&0o777 != 0o666 {
		t.Fatalf("the mount's cache shows mode %o (%v): the test needs it stale (0666)", st.Mode&0o777, err)
	}
	want := map[string]syscall.Errno{
		"setxattr-user": syscall.EACCES,
		"truncate":      syscall.EACCES,
		"utimes-now":    syscall.EACCES,
		"create":        syscall.EACCES,
		"mkdir":         syscall.EACCES,
		"unlink":        syscall.EACCES,
		"rename-across": syscall.EACCES,
	}
	// No readdir or lookup first: their replies would refresh the cache.
	job := Job{Dirs: []string{x}}
	for op := range want {
		job.Ops = append(job.Ops, op)
	}
	res, err := helper(bin, oth, job, false)
	if err != nil {
		t.Fatal(err)
	}
	got := res[x]
	for op, want := range want {
		if g := syscall.Errno(got[op]); g != want {
			t.Errorf("%s through a mount with a stale cache: %q, want %q (the MDS's answer)", op, errName(g), errName(want))
		}
	}
}
