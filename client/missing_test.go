package client_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestMissingComponent: a component removed behind the MDS's back is not
// a hole. A file without redundancy fails its read with EIO instead of
// returning NULs; a mirror file reads right from the other copy, the MDS
// marks the lost copy stale and rebuilds it, and the rebuilt copy alone
// then serves the right bytes. Holes the file really has still read as
// zeros.
func TestMissingComponent(t *testing.T) {
	rnd := rand.New(rand.NewPCG(seed(t), 10))
	cl := testcluster.Start(t, 4)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	write := func(name, spec string) *client.LayoutInfo {
		t.Helper()
		f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE, 0o644, spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := c.GetLayout(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	lose := func(name string, info *client.LayoutInfo, comp int) {
		t.Helper()
		a, err := c.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		id := rpc.ComponentID{Ino: a.Ino, Gen: info.Layout.Generation, Col: uint32(comp)}
		if err := cl.LoseComponent(ctx, info.Layout.Targets[comp], id); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) ([]byte, error) {
		f, err := c.Open(ctx, name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(f)
	}

	t.Run("none", func(t *testing.T) {
		info := write("/none", "width=2,unit=64K,scheme=none")
		lose("/none", info, 1)
		got, err := read("/none")
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("read of a file with a lost component: %d bytes, err %v; want EIO (zeros in the lost column: %v)",
				len(got), err, len(got) == len(data) && bytes.Equal(got[64<<10:128<<10], make([]byte, 64<<10)))
		}
	})

	t.Run("holes", func(t *testing.T) {
		// A sparse file: the first column is never written, only grown.
		f, err := c.OpenFileLayout(ctx, "/sparse", os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=64K,scheme=none")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("tail"), 3*64<<10+100); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := read("/sparse")
		want := append(make([]byte, 3*64<<10+100), "tail"...)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("sparse file: %d bytes, err %v; want %d bytes of zeros and a tail", len(got), err, len(want))
		}
	})

	t.Run("mirror", func(t *testing.T) {
		info := write("/mirror", "width=2,unit=64K,scheme=mirror:2")
		lose("/mirror", info, 0) // copy 0 of column 0: read first
		got, err := read("/mirror")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read with a lost copy: %d bytes, err %v; want the %d bytes written", len(got), err, len(data))
		}
		// The read told the MDS, which rebuilds the copy.
		deadline := time.Now().Add(time.Minute)
		for {
			now, err := c.GetLayout(ctx, "/mirror")
			if err != nil {
				t.Fatal(err)
			}
			a, _ := c.Stat(ctx, "/mirror")
			id := rpc.ComponentID{Ino: a.Ino, Gen: now.Layout.Generation, Col: 0}
			fi, serr := os.Stat(cl.DS(cl.DSIndex(now.Layout.Targets[0])).ComponentPath(id))
			if len(now.Stale) == 0 && serr == nil && fi.Size() == 128<<10 {
				info = now
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lost copy not rebuilt after a minute: stale %v, component on %s: %v", now.Stale, now.Layout.Targets[0], serr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The other copy of column 0 gone too: the rebuilt one serves.
		other := cl.DSIndex(info.Layout.Targets[info.Layout.MirrorComponent(0, 1)])
		if err := cl.StopDS(other); err != nil {
			t.Fatal(err)
		}
		got, err = read("/mirror")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read from the rebuilt copy: %d bytes, err %v; want the %d bytes written", len(got), err, len(data))
		}
	})
}
