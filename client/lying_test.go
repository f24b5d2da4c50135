package client_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestLyingDataServer: a data server that hands out other bytes than it
// stored (ds1, behind a proxy that flips a byte of every read reply) is
// caught by the reading client's end-to-end check: a file without
// redundancy fails its read with EIO instead of returning the wrong bytes,
// and a mirror file reads right from the honest copy, its fault reported.
func TestLyingDataServer(t *testing.T) {
	var lies atomic.Int64
	cl := testcluster.Start(t, 2, testcluster.WithLyingDS(t, "ds1", &lies))
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4*client.DefaultConfig().ChunkSize/16)
	for _, tc := range []struct{ name, spec string }{
		{"/none", "width=2,unit=64K,scheme=none"},
		{"/mirror", "width=1,unit=64K,scheme=mirror:2"},
	} {
		f, err := c.OpenFileLayout(ctx, tc.name, os.O_RDWR|os.O_CREATE, 0o644, tc.spec)
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

	before := lies.Load()
	f, err := c.Open(ctx, "/none")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a none file from a lying server: %d bytes, err %v (right bytes: %v); want EIO",
			len(got), err, bytes.Equal(got, data))
	}
	if lies.Load() == before {
		t.Fatal("the proxy changed no reply: the test tested nothing")
	}

	before = lies.Load()
	f, err = c.Open(ctx, "/mirror")
	if err != nil {
		t.Fatal(err)
	}
	var faults atomic.Int64
	f.SetFaultHandler(func(client.Fault) { faults.Add(1) })
	// Read chunk by chunk, so that both copies are asked (reads spread
	// over the copies by offset).
	got = got[:0]
	buf := make([]byte, client.DefaultConfig().ChunkSize)
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read of a mirror file at %d: %v", off, err)
		}
	}
	f.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("read of a mirror file with a lying copy: %d bytes, not the %d written", len(got), len(data))
	}
	if lies.Load() == before {
		t.Fatal("no read of the mirror file reached the lying copy: the test tested nothing")
	}
	if faults.Load() == 0 {
		t.Error("the lying copy's replies were not reported as faults")
	}
}

// TestLieOnce: a read reply corrupted once (a fault in transit, or a
// block rewritten while the data server sent it from its file) fails the
// client's check, and the client reads that range again, verified by the
// data server: the read returns the right bytes, and no fault is
// reported, so a component is not marked stale for a one-off.
func TestLieOnce(t *testing.T) {
	var lies atomic.Int64
	cl := testcluster.Start(t, 2, testcluster.WithLyingDSFor(t, "ds1", &lies, 1))
	ctx := testcluster.Context(t, time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("fedcba9876543210"), 4*client.DefaultConfig().ChunkSize/16)
	writeFile(t, ctx, c, "/once", "width=2,unit=64K,scheme=none", data)
	f, err := c.Open(ctx, "/once")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var faults atomic.Int64
	f.SetFaultHandler(func(client.Fault) { faults.Add(1) })
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read with one reply corrupted: %d bytes, %v (right bytes: %v); want the %d written",
			len(got), err, bytes.Equal(got, data), len(data))
	}
	if lies.Load() != 1 {
		t.Fatalf("the proxy changed %d replies, want 1: the test tested nothing", lies.Load())
	}
	if n := faults.Load(); n != 0 {
		t.Errorf("%d faults reported for a reply that read right the second time", n)
	}
}
