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
	// As on ext4, what was written within the limit is kept; make room.
	if fi, err := os.Stat(filepath.Join(proj, "a")); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("file written past the limit: %v, %v; want at most the 1 MiB limit kept", fi, err)
	}
	if err := os.Truncate(filepath.Join(proj, "a"), 0); err != nil {
		t.Fatal(err)
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

// TestQuotaAtWrite: through a FUSE mount, the write(2) that takes a file
// past its project's or its owner's byte limit fails with EDQUOT itself,
// not only the close after it (Lustre's grants behave so); the bytes
// written before it are kept and committed by the close, and `strata
// quota` counts them.
func TestQuotaAtWrite(t *testing.T) {
	requireFUSE(t)
	c := newCLI(t, 2)
	_, dir := startMount(t, c.env())
	c.ok("mkdir", "/proj")
	c.ok("quota", "project", "7", "/proj")
	c.ok("mkdir", "/mine")

	for _, tc := range []struct {
		name, path string
		who        []string // strata quota's flags naming the quota
	}{
		// Root's own quota first, while root uses nothing yet; it is
		// removed after, so that the project's test counts alone.
		{"user", filepath.Join(dir, "mine", "f"), []string{"-u", "0"}},
		{"project", filepath.Join(dir, "proj", "f"), []string{"-p", "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.ok(append([]string{"quota", "set", "--bytes", "1M"}, tc.who...)...)
			defer c.ok(append([]string{"quota", "set", "--bytes", "0"}, tc.who...)...)
			f, err := os.Create(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			chunk := make([]byte, 600<<10)
			for i := range chunk {
				chunk[i] = byte(i % 251)
			}
			if _, err := f.Write(chunk); err != nil {
				t.Fatalf("600 KiB of a 1 MiB quota: %v", err)
			}
			_, err = f.Write(chunk)
			if !errors.Is(err, syscall.EDQUOT) {
				t.Errorf("the write past the 1 MiB quota (to 1200 KiB): %v, want EDQUOT at the write", err)
			}
			if err := f.Close(); err != nil {
				t.Errorf("close after the refused write: %v (what was within the quota must be kept)", err)
			}
			got, err := os.ReadFile(tc.path)
			if err != nil || string(got) != string(chunk) {
				t.Errorf("file after the refused write: %d bytes, %v; want the first 600 KiB", len(got), err)
			}
			if out := c.ok(append([]string{"quota"}, tc.who...)...); !strings.Contains(out, "600K") {
				t.Errorf("strata quota %s after 600 KiB:\n%s", strings.Join(tc.who, " "), out)
			}
		})
	}
}
