package fuse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestLyingDataServer: through the mount, a file whose data server hands
// out other bytes than it stored (a proxy flips a byte of every read
// reply) reads with EIO, never the wrong bytes.
func TestLyingDataServer(t *testing.T) {
	var lies atomic.Int64
	cl, srv := startMount(t, 2, testcluster.WithLyingDS(t, "ds1", &lies))
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("strata!"), 40000)
	// Written through the library: the kernel has no page of it cached.
	f, err := c.OpenFileLayout(ctx, "/f", os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=64K,scheme=none")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(srv.Dir(), "f"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read through the mount from a lying data server: %d bytes, err %v (right bytes: %v); want EIO",
			len(got), err, bytes.Equal(got, data))
	}
	if lies.Load() == 0 {
		t.Fatal("the proxy changed no reply: the test tested nothing")
	}
}
