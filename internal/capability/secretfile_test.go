package capability

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestLoadOrCreateSecretFile: concurrent creators and readers all get the
// same full secret; the file is private; a wrong-sized file is refused.
func TestLoadOrCreateSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	var wg sync.WaitGroup
	got := make([][]byte, 16)
	errs := make([]error, 16)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = LoadOrCreateSecretFile(path)
		}(i)
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || !bytes.Equal(got[i], got[0]) || len(got[i]) != SecretSize {
			t.Fatalf("creator %d: %x, %v; creator 0: %x", i, got[i], errs[i], got[0])
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateSecretFile(path); err == nil {
		t.Fatal("a 5-byte secret file was accepted")
	}
}
