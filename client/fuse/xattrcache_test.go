package fuse

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	for _, name := range []string{"security.other", "user.color", "trusted.x"} {
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

// TestXattrUnsupported: SELinux labels, POSIX ACLs and file capabilities
// are not carried by the mount: getxattr, setxattr and removexattr of
// security.selinux, system.posix_acl_access and security.capability answer
// EOPNOTSUPP, as on an NFS mount without labeled NFS or ACLs, so chcon,
// setfacl and setcap fail instead of appearing to work, and `ls -l` stops
// asking after the first file (it asks again of every file after ENODATA,
// a FUSE request each). Other security. attributes are kept.
func TestXattrUnsupported(t *testing.T) {
	_, m := startMount(t, 2)
	p := filepath.Join(m.Dir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	// A POSIX ACL granting user 1234 read, as setfacl -m u:1234:r writes it.
	acl := []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 4, 0, 0xd2, 4, 0, 0, 4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff}
	for name, value := range map[string][]byte{
		"security.selinux":        []byte("system_u:object_r:user_home_t:s0"),
		"system.posix_acl_access": acl,
		"security.capability":     {0, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		if _, err := unix.Lgetxattr(p, name, buf); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("getxattr %s = %v, want EOPNOTSUPP", name, err)
		}
		if err := unix.Lsetxattr(p, name, value, 0); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("setxattr %s = %v, want EOPNOTSUPP", name, err)
		}
		if err := unix.Lremovexattr(p, name); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("removexattr %s = %v, want EOPNOTSUPP", name, err)
		}
	}
	name := "security.selinux"
	if err := unix.Lsetxattr(p, "security.other", []byte("v"), 0); err != nil {
		t.Fatalf("setxattr security.other as root: %v", err)
	}
	if n, err := unix.Lgetxattr(p, "security.other", buf); err != nil || string(buf[:n]) != "v" {
		t.Fatalf("getxattr security.other = %q, %v; want v", buf[:max(n, 0)], err)
	}
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
	if !slices.Contains(names, "security.other") || slices.Contains(names, name) {
		t.Fatalf("listxattr = %q; want security.other and no %s", names, name)
	}
}
