package fuse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestNoSpace: a file system whose data servers are full answers writes
// with ENOSPC ("No space left on device"), by the write, the fsync or the
// close at the latest, never with EIO; the files already there keep their
// bytes; and once a file is removed its space is given back and writes
// succeed again, as on a full local disk.
func TestNoSpace(t *testing.T) {
	for _, tc := range []struct{ name, layout string }{
		{"none", "width=2,unit=1M"},
		{"mirror", "width=1,unit=1M,scheme=mirror:2"},
	} {
		t.Run(tc.name, func(t *testing.T) { testNoSpace(t, tc.layout) })
	}
}

func testNoSpace(t *testing.T, spec string) {
	const capacity = 8 << 20 // per data server: 16 MiB in all
	_, s := startMount(t, 2, testcluster.WithCapacity(capacity), testcluster.WithDefaultLayout(spec))
	keep := bytes.Repeat([]byte("kept "), 1<<19) // 2.5 MiB
	kept := filepath.Join(s.Dir(), "kept")
	if err := os.WriteFile(kept, keep, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(s.Dir(), "big")
	err := writeFile(big, make([]byte, 32<<20))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 32 MiB into 16 MiB: %v, want ENOSPC", err)
	}
	if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, keep) {
		t.Fatalf("the file written before: %d bytes, %v; want its %d bytes intact", len(got), err, len(keep))
	}
	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	// The removed file's components are collected in the background.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := writeFile(filepath.Join(s.Dir(), "again"), make([]byte, 4<<20))
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENOSPC) || time.Now().After(deadline) {
			t.Fatalf("writing 4 MiB after removing the big file: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// writeFile writes b to a new file name and returns the first error of
// the write, the fsync or the close.
func writeFile(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}
