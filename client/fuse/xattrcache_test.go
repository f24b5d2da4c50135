package fuse

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestXattrAbsent: a file with no extended attributes answers getxattr
// with ENODATA (what `ls -l` asks of every file); an attribute set through this mount reads back at
// once, one set through another mount once the attribute cache has
// expired at the latest.
func TestXattrAbsent(t *testing.T) {
	cl, a := startMount(t, 2)
	b := mountCluster(t, cl, DefaultOptions())
	pa, pb := filepath.Join(a.Dir(), "f"), filepath.Join(b.Dir(), "f")
	if err := os.WriteFile(pa, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for _, name := range []string{"security.selinux", "user.color", "trusted.x"} {
		if _, err := unix.Lgetxattr(pa, name, buf); !errors.Is(err, unix.ENODATA) {
			t.Fatalf("getxattr %s of a file without xattrs = %v, want ENODATA", name, err)
		}
	}
	// b looks the file up and learns it has no xattrs.
	if _, err := unix.Lgetxattr(pb, "user.color", buf); !errors.Is(err, unix.ENODATA) {
		t.Fatalf("getxattr through the second mount = %v, want ENODATA", err)
	}
	if err := unix.Setxattr(pa, "user.color", []byte("blue"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Getxattr(pa, "user.color", buf); err != nil || string(buf[:n]) != "blue" {
		t.Fatalf("getxattr right after setxattr on the same mount = %q, %v", buf[:n], err)
	}
	deadline := time.Now().Add(3*DefaultOptions().AttrTimeout + 10*time.Second)
	for {
		n, err := unix.Getxattr(pb, "user.color", buf)
		if err == nil && string(buf[:n]) == "blue" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second mount still answers %q, %v for an xattr set through the first", buf[:max(n, 0)], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
