package fuse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestWriteBehindError: when a data server dies under buffered writes,
// the application is told: the next writes fail, and close (or fsync)
// returns EIO, never success.
func TestWriteBehindError(t *testing.T) {
	cl, s := startMount(t, 2, testcluster.WithDefaultLayout("width=2,unit=1M"))
	f, err := os.Create(filepath.Join(s.Dir(), "doomed"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("d"), 1<<20)
	for i := 0; i < 4; i++ {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync with both data servers up: %v", err)
	}
	if err := cl.StopDS(0); err != nil {
		t.Fatal(err)
	}
	var werr error
	for i := 0; i < 16 && werr == nil; i++ {
		_, werr = f.Write(chunk)
	}
	cerr := f.Close()
	if !errors.Is(cerr, syscall.EIO) && !errors.Is(werr, syscall.EIO) {
		t.Fatalf("with a data server down: writes returned %v, close %v; want EIO from one of them", werr, cerr)
	}
	if cerr == nil {
		t.Errorf("close returned success after a write behind failed (write said %v)", werr)
	}
}
