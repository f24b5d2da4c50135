package fuse

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestMissingComponent: through the mount, a file whose component was
// removed behind the MDS's back reads with EIO when it has no redundancy
// (never as NULs), and right from the other copy when it is a mirror,
// whose lost copy the MDS then rebuilds.
func TestMissingComponent(t *testing.T) {
	cl, srv := startMount(t, 4)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	data := make([]byte, 256<<10)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	for _, tc := range []struct {
		name, spec string
		wantEIO    bool
	}{
		{"none", "width=2,unit=64K,scheme=none", true},
		{"mirror", "width=2,unit=64K,scheme=mirror:2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Written through the library, so that the kernel has no page
			// of it cached: the reads below reach the mount.
			name := "/" + tc.name
			f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE, 0o644, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(srv.Dir(), tc.name)
			info, err := c.GetLayout(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Stat(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			id := rpc.ComponentID{Ino: a.Ino, Gen: info.Layout.Generation, Col: 0}
			if err := cl.LoseComponent(ctx, info.Layout.Targets[0], id); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if tc.wantEIO {
				if !errors.Is(err, syscall.EIO) {
					t.Fatalf("read through the mount: %d bytes, err %v; want EIO", len(got), err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read through the mount: %d bytes, err %v; want the %d bytes written", len(got), err, len(data))
			}
			deadline := time.Now().Add(time.Minute)
			for {
				now, err := c.GetLayout(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				_, serr := os.Stat(cl.DS(cl.DSIndex(now.Layout.Targets[0])).ComponentPath(id))
				if len(now.Stale) == 0 && serr == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("lost copy not rebuilt after a minute: stale %v: %v", now.Stale, serr)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
