package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestXattrLimitsThroughMount: through a FUSE mount, a file takes at most
// 128 extended attributes and 256 KiB of them (ENOSPC past either, as
// ext4), a value of at most 64 KiB (E2BIG), and a removal makes room.
func TestXattrLimitsThroughMount(t *testing.T) {
	requireFUSE(t)
	c := newCLI(t, 1)
	_, dir := startMount(t, c.env())
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setxattr(f, "user.big", make([]byte, 64<<10+1), 0); !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("a 64 KiB + 1 value: %v, want E2BIG", err)
	}
	for i := range 4 {
		if err := syscall.Setxattr(f, fmt.Sprintf("user.v%d", i), make([]byte, 64<<10-100), 0); err != nil {
			t.Fatalf("value %d of 64 KiB: %v", i, err)
		}
	}
	if err := syscall.Setxattr(f, "user.v4", make([]byte, 64<<10-100), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a fifth 64 KiB value: %v, want ENOSPC", err)
	}
	for i := range 4 {
		if err := syscall.Removexattr(f, fmt.Sprintf("user.v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 128 {
		if err := syscall.Setxattr(f, fmt.Sprintf("user.n%d", i), []byte("v"), 0); err != nil {
			t.Fatalf("xattr %d: %v", i, err)
		}
	}
	if err := syscall.Setxattr(f, "user.n128", []byte("v"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("xattr 129: %v, want ENOSPC", err)
	}
	if err := syscall.Removexattr(f, "user.n0"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setxattr(f, "user.n128", []byte("v"), 0); err != nil {
		t.Fatalf("xattr 128 after a removal: %v", err)
	}
}
