package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/strata-hpc/strata/internal/capability"
)

// readSecret reads the cluster secret file.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if len(b) != capability.SecretSize {
		return nil, fmt.Errorf("secret file %s: %d bytes, want %d", path, len(b), capability.SecretSize)
	}
	return b, nil
}

// loadOrCreateSecret reads the secret file, first creating it (mode 0600,
// fresh random bytes) if it does not exist.
func loadOrCreateSecret(path string) ([]byte, error) {
	b, err := capability.NewSecret()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return readSecret(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("secret file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("secret file: %w", err)
	}
	return b, nil
}
