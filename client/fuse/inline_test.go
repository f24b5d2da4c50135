package fuse

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestInlineThroughMounts: small files written through one mount (kept in
// the MDS) read back byte-identical through another, after an overwrite
// in place, after an append that moves the file to its data servers, and
// after a truncate past the threshold.
func TestInlineThroughMounts(t *testing.T) {
	cl := testcluster.Start(t, 4, testcluster.WithMDSConfig(func(c *mds.Config) { c.InlineMax = 64 << 10 }))
	a := mountCluster(t, cl, DefaultOptions())
	b := mountCluster(t, cl, DefaultOptions())
	wait := func() { time.Sleep(DefaultOptions().AttrTimeout + DefaultOptions().EntryTimeout) }
	check := func(name string, want []byte) {
		t.Helper()
		if got, err := os.ReadFile(filepath.Join(b.Dir(), name)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: the other mount reads %d bytes, %v; want the %d written", name, len(got), err, len(want))
		}
	}
	small := bytes.Repeat([]byte("small!"), 1000)
	for _, name := range []string{"f", "g", "h"} {
		if err := os.WriteFile(filepath.Join(a.Dir(), name), small, 0o644); err != nil {
			t.Fatal(err)
		}
		check(name, small)
	}

	// Overwritten in place, still inline.
	f, err := os.OpenFile(filepath.Join(a.Dir(), "h"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("OVERWRITTEN"), 3000); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h := bytes.Clone(small)
	copy(h[3000:], "OVERWRITTEN")

	// Appended past the threshold: on the data servers from then on.
	tail := bytes.Repeat([]byte("tail-"), 40_000)
	f, err = os.OpenFile(filepath.Join(a.Dir(), "f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(tail); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Truncated past the threshold.
	if err := os.Truncate(filepath.Join(a.Dir(), "g"), 300_000); err != nil {
		t.Fatal(err)
	}
	wait()
	check("h", h)
	check("f", append(bytes.Clone(small), tail...))
	check("g", append(bytes.Clone(small), make([]byte, 300_000-len(small))...))
}
