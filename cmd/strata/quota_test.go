package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestQuotaThroughMount: a project quota set with `strata quota` holds
// through a FUSE mount: a create past the inode limit and a file written
// past the byte limit fail with EDQUOT ("Disk quota exceeded"), what was
// within the limits is kept, and `strata quota` shows the usage.
func TestQuotaThroughMount(t *testing.T) {
	requireFUSE(t)
	c := newCLI(t, 2)
	_, dir := startMount(t, c.env())
	c.ok("mkdir", "/proj")
	c.ok("quota", "project", "7", "/proj")
	out := c.ok("quota", "set", "-p", "7", "--inodes", "4", "--bytes", "1M")
	if !strings.Contains(out, "Disk quotas for project 7:") || !strings.Contains(out, "1M") {
		t.Fatalf("quota set printed:\n%s", out)
	}
	proj := filepath.Join(dir, "proj")
	for _, name := range []string{"a", "b", "c"} { // with the directory: 4 inodes
		if err := os.WriteFile(filepath.Join(proj, name), nil, 0o644); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	_, err := os.Create(filepath.Join(proj, "d"))
	if !errors.Is(err, syscall.EDQUOT) || !strings.Contains(err.Error(), "disk quota exceeded") {
		t.Fatalf("create past the inode limit: %v, want EDQUOT", err)
	}
	if err := os.Mkdir(filepath.Join(proj, "e"), 0o755); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("mkdir past the inode limit: %v, want EDQUOT", err)
	}
	big := make([]byte, 2<<20)
	if err := os.WriteFile(filepath.Join(proj, "a"), big, 0o644); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("2 MiB written past the 1 MiB limit: %v, want EDQUOT", err)
	}
	if err := os.WriteFile(filepath.Join(proj, "b"), make([]byte, 512<<10), 0o644); err != nil {
		t.Fatalf("512 KiB within the limit: %v", err)
	}
	out = c.ok("quota", "-p", "7")
	if !strings.Contains(out, "Disk quotas for project 7:") || !strings.Contains(out, "512K") {
		t.Fatalf("quota -p 7 printed:\n%s", out)
	}
	// A user without a quota is not limited by the project's of another.
	c.ok("mkdir", "/free")
	if err := os.WriteFile(filepath.Join(dir, "free", "f"), big, 0o644); err != nil {
		t.Fatalf("2 MiB outside the project: %v", err)
	}
}
