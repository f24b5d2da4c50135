package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// devToken returns the admin API's bearer token of a `strata dev` in dir
// and the file that holds it: the one given, else the one dir/admin-token
// holds from an earlier run, else a new random one written there (mode
// 0600), so that the token stays the same across runs on one directory.
func devToken(dir, given string) (token, file string, err error) {
	file = filepath.Join(dir, "admin-token")
	if given != "" {
		return given, "", nil
	}
	b, err := os.ReadFile(file)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), file, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	token = hex.EncodeToString(raw)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("admin token: %w", err)
	}
	return token, file, nil
}
