package main

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestLsStatSpecialFiles: ls -l shows each special file's type letter and
// a device node's numbers where a file's size goes; stat names the type
// and shows the device as major,minor.
func TestLsStatSpecialFiles(t *testing.T) {
	tc := testcluster.Start(t, 1)
	c := &cli{t: t, mds: tc.MDSAddr(), secret: secretFile(tc)}
	cl := tc.Client()
	ctx := context.Background()
	for _, f := range []struct {
		name       string
		mode, rdev uint32
	}{
		{"/fifo", rpc.TypeFifo | 0o644, 0},
		{"/null", rpc.TypeChar | 0o666, rpc.Mkdev(1, 3)},
		{"/nvme", rpc.TypeBlock | 0o660, rpc.Mkdev(259, 70000)},
		{"/sock", rpc.TypeSocket | 0o755, 0},
	} {
		if err := cl.Mknod(ctx, f.name, f.mode, f.rdev); err != nil {
			t.Fatalf("mknod %s: %v", f.name, err)
		}
	}
	out := c.ok("ls", "-l", "/")
	for _, want := range []string{"prw-r--r-- ", "crw-rw-rw- ", " 1, 3 ", "brw-rw---- ", " 259, 70000 ", "srwxr-xr-x "} {
		if !strings.Contains(out, want) {
			t.Errorf("ls -l / lacks %q:\n%s", want, out)
		}
	}
	for path, want := range map[string][]string{
		"/fifo": {"type: fifo", "mode: 0644 (prw-r--r--)"},
		"/null": {"type: character special file", "device: 1,3"},
		"/nvme": {"type: block special file", "device: 259,70000", "(brw-rw----)"},
		"/sock": {"type: socket", "(srwxr-xr-x)"},
	} {
		out := c.ok("stat", path)
		flat := strings.Join(strings.Fields(out), " ") // the columns' width is the longest key's
		for _, w := range want {
			if !strings.Contains(flat, w) {
				t.Errorf("stat %s lacks %q:\n%s", path, w, out)
			}
		}
	}
}
