package capability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ReadSecretFile reads a cluster secret file.
func ReadSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if len(b) != SecretSize {
		return nil, fmt.Errorf("secret file %s: %d bytes, want %d", path, len(b), SecretSize)
	}
	return b, nil
}

// LoadOrCreateSecretFile reads the secret file at path, first creating it
// (mode 0600, fresh random bytes) if it does not exist. Creation is atomic:
// the secret is written to a temporary file and linked into place, so a
// concurrent reader never sees a partial file, and of two concurrent
// creators one wins and both return its secret.
func LoadOrCreateSecretFile(path string) ([]byte, error) {
	if b, err := ReadSecretFile(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	b, err := NewSecret()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if _, err := tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return ReadSecretFile(path) // another creator won
		}
		return nil, fmt.Errorf("secret file: %w", err)
	}
	return b, nil
}
