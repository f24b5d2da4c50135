package fuse

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// logBuffer collects a mount's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func getxattr(t *testing.T, path, name string) string {
	t.Helper()
	buf := make([]byte, 256)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		t.Fatalf("getxattr %s %s: %v", path, name, err)
	}
	return string(buf[:n])
}

// TestLayoutXattr: user.strata.layout through the mount sets a
// directory's policy (new files inherit it), sets the layout of an empty
// file, and refuses bad values and files with data, leaving them as they
// were.
func TestLayoutXattr(t *testing.T) {
	cl := testcluster.Start(t, 4)
	var logs logBuffer
	opts := DefaultOptions()
	opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	s := mountCluster(t, cl, opts)
	c := cl.Client()
	ctx := context.Background()
	dir := filepath.Join(s.Dir(), "proj")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("directory policy is inherited", func(t *testing.T) {
		if err := unix.Setxattr(dir, rpc.LayoutXattr, []byte("width=2,unit=64K"), 0); err != nil {
			t.Fatalf("setxattr: %v", err)
		}
		if v := getxattr(t, dir, rpc.LayoutXattr); !strings.Contains(v, "width=2") || !strings.Contains(v, "unit=64K") {
			t.Errorf("directory shows %q", v)
		}
		f := filepath.Join(dir, "new")
		data := bytes.Repeat([]byte("abc"), 100_000)
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := c.GetLayout(ctx, "/proj/new") // what `strata getstripe` shows
		if err != nil {
			t.Fatal(err)
		}
		if info.Layout.Width != 2 || info.Layout.Unit != 64<<10 {
			t.Errorf("new file has layout %s, want width 2 unit 64K", info.Spec)
		}
		if v := getxattr(t, f, rpc.LayoutXattr); v != info.Spec {
			t.Errorf("getxattr shows %q, getstripe %q", v, info.Spec)
		}
		if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, data) {
			t.Errorf("read back: %v", err)
		}
	})

	t.Run("empty file takes a layout before its data", func(t *testing.T) {
		// What the MPI-IO shim does: create, set the layout, then write,
		// all through one open descriptor.
		p := filepath.Join(dir, "hinted")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Fsetxattr(int(f.Fd()), rpc.LayoutXattr, []byte("width=4,unit=1M"), 0); err != nil {
			t.Fatalf("fsetxattr: %v", err)
		}
		data := bytes.Repeat([]byte("0123456789"), 500_000)
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := c.GetLayout(ctx, "/proj/hinted")
		if err != nil {
			t.Fatal(err)
		}
		if info.Layout.Width != 4 || info.Layout.Unit != 1<<20 {
			t.Errorf("layout %s, want width 4 unit 1M", info.Spec)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
			t.Errorf("read back %d bytes: %v", len(got), err)
		}
	})

	t.Run("bad value is EINVAL and changes nothing", func(t *testing.T) {
		p := filepath.Join(dir, "empty")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		before := getxattr(t, p, rpc.LayoutXattr)
		for _, v := range []string{"width=banana", "frobnicate=1", "width=2,unit=3"} {
			if err := unix.Setxattr(p, rpc.LayoutXattr, []byte(v), 0); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("setxattr %q: %v, want EINVAL", v, err)
			}
		}
		if after := getxattr(t, p, rpc.LayoutXattr); after != before {
			t.Errorf("layout changed from %q to %q", before, after)
		}
		if err := unix.Setxattr(dir, rpc.LayoutXattr, []byte("width=banana"), 0); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("setxattr on a directory: %v, want EINVAL", err)
		}
	})

	t.Run("file with data is EEXIST with a clear message", func(t *testing.T) {
		p := filepath.Join(dir, "full")
		if err := os.WriteFile(p, []byte("some data"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := getxattr(t, p, rpc.LayoutXattr)
		if err := unix.Setxattr(p, rpc.LayoutXattr, []byte("width=1"), 0); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("setxattr on a file with data: %v, want EEXIST", err)
		}
		if !strings.Contains(logs.String(), "cannot change the layout of a file that has data") {
			t.Errorf("the mount's log does not say why:\n%s", logs.String())
		}
		// Data still in this mount's write buffer counts as data.
		f, err := os.OpenFile(filepath.Join(dir, "buffered"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fsetxattr(int(f.Fd()), rpc.LayoutXattr, []byte("width=1"), 0); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("setxattr on a file with buffered data: %v, want EEXIST", err)
		}
		if after := getxattr(t, p, rpc.LayoutXattr); after != before {
			t.Errorf("layout changed from %q to %q", before, after)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "some data" {
			t.Errorf("data now %q, %v", got, err)
		}
	})

	t.Run("listxattr and user xattrs", func(t *testing.T) {
		p := filepath.Join(dir, "new")
		if err := unix.Setxattr(p, "user.color", []byte("blue"), 0); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, err := unix.Listxattr(p, buf)
		if err != nil {
			t.Fatal(err)
		}
		names := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
		if strings.Join(names, ",") != "user.color,"+rpc.LayoutXattr {
			t.Errorf("listxattr: %q", names)
		}
		if err := unix.Removexattr(p, "user.color"); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Getxattr(p, "user.color", buf); !errors.Is(err, unix.ENODATA) {
			t.Errorf("getxattr after remove: %v, want ENODATA", err)
		}
	})
}
