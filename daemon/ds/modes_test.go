package ds

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestStoreModes: a store is private to the data server's user. A new
// store's directories are 0700 and its files 0600 whatever the umask
// allows; a store left with wider modes by an older version is narrowed
// when the data server starts on it.
func TestStoreModes(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 0x1234, Gen: 1, Col: 2}
	h.mustWrite(id, 0, []byte("secret bytes"))
	checkModes(t, h.cfg.Dir)

	// An old store: everything readable by every local user.
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(h.cfg.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Listen = "127.0.0.1:0"
	h.start()
	checkModes(t, h.cfg.Dir)
	if got := string(h.mustRead(id, 0, 12)); got != "secret bytes" {
		t.Fatalf("read after the modes were fixed = %q", got)
	}
}

// checkModes fails unless every directory under dir is 0700 and every
// file 0600, and at least one component was found.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 { // ds.format, a component and its checksums
		t.Fatalf("found %d files under %s", files, dir)
	}
}
