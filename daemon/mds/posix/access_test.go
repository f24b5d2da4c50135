package posix

import (
	"errors"
	"syscall"
	"testing"
)

const (
	dir  = syscall.S_IFDIR
	file = syscall.S_IFREG
	link = syscall.S_IFLNK
)

// Callers: alice owns the inodes below; bob is in alice's group 100
// through a supplementary group; carol is in neither; root is root.
var (
	alice = &Cred{Uid: 1000, Gid: 100}
	bob   = &Cred{Uid: 1001, Gid: 1001, Groups: []uint32{100}}
	carol = &Cred{Uid: 1002, Gid: 1002}
	root  = &Cred{}
)

func ino(mode uint32) *Inode { return &Inode{Mode: mode, Uid: 1000, Gid: 100} }

// errnoOf is the errno of a decision: 0 for nil.
func errnoOf(err error) syscall.Errno {
	var n syscall.Errno
	if err == nil || !errors.As(err, &n) {
		return 0
	}
	return n
}

func TestPermission(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Cred
		n    *Inode
		mask uint32
		want syscall.Errno
	}{
		{"owner reads 0600", alice, ino(file | 0o600), Read, 0},
		{"owner writes 0400", alice, ino(file | 0o400), Write, syscall.EACCES},
		{"owner class does not fall through to group", alice, ino(file | 0o070), Read, syscall.EACCES},
		{"supplementary group reads 0640", bob, ino(file | 0o640), Read, 0},
		{"supplementary group writes 0640", bob, ino(file | 0o640), Write, syscall.EACCES},
		{"group class does not fall through to other", bob, ino(file | 0o607), Read, syscall.EACCES},
		{"other reads 0644", carol, ino(file | 0o644), Read, 0},
		{"other reads 0640", carol, ino(file | 0o640), Read, syscall.EACCES},
		{"other searches 0711", carol, ino(dir | 0o711), Exec, 0},
		{"other lists 0711", carol, ino(dir | 0o711), Read, syscall.EACCES},
		{"root reads 0000", root, ino(file), Read | Write, 0},
		{"root searches 0000 directory", root, ino(dir), Exec | Write, 0},
		{"root executes 0644 file", root, ino(file | 0o644), Exec, syscall.EACCES},
		{"root executes 0744 file", root, ino(file | 0o744), Exec, 0},
	} {
		if got := errnoOf(Permission(tc.c, tc.n, tc.mask)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDelete(t *testing.T) {
	mine := &Inode{Mode: file | 0o644, Uid: 1001, Gid: 1001} // bob's
	for _, tc := range []struct {
		name   string
		c      *Cred
		dir    *Inode
		victim *Inode
		want   syscall.Errno
	}{
		{"owner of 0755 directory", alice, ino(dir | 0o755), ino(file), 0},
		{"other in 0755 directory", carol, ino(dir | 0o755), ino(file | 0o666), syscall.EACCES},
		{"group member in 0775 directory", bob, ino(dir | 0o775), ino(file), 0},
		{"sticky: other's file", carol, ino(dir | 0o1777), ino(file | 0o666), syscall.EPERM},
		{"sticky: own file", bob, ino(dir | 0o1777), mine, 0},
		{"sticky: directory owner", alice, ino(dir | 0o1777), mine, 0},
		{"sticky: root", root, ino(dir | 0o1777), mine, 0},
		{"sticky without write", carol, ino(dir | 0o1755), ino(file), syscall.EACCES},
	} {
		if got := errnoOf(Delete(tc.c, tc.dir, tc.victim)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Cred
		n    *Inode
		want syscall.Errno
	}{
		{"owner", alice, ino(file | 0o600), 0},
		{"other who may read and write", carol, ino(file | 0o666), 0},
		{"other who may only read", carol, ino(file | 0o644), syscall.EPERM},
		{"other, setuid file", carol, ino(file | 0o4666), syscall.EPERM},
		{"other, setgid-executable file", carol, ino(file | 0o2676), syscall.EPERM},
		{"other, symbolic link", carol, ino(link | 0o777), syscall.EPERM},
		{"root", root, ino(file), 0},
	} {
		if got := errnoOf(Link(tc.c, tc.n)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOpen(t *testing.T) {
	if got := errnoOf(Open(root, ino(dir|0o777), false, true)); got != syscall.EISDIR {
		t.Errorf("directory for writing: %v, want EISDIR", got)
	}
	if got := errnoOf(Open(bob, ino(file|0o640), true, true)); got != syscall.EACCES {
		t.Errorf("read-write by a reader: %v, want EACCES", got)
	}
	if got := errnoOf(Open(bob, ino(file|0o620), false, true)); got != 0 {
		t.Errorf("write-only by a writer: %v, want success", got)
	}
}

func TestChmod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        *Cred
		n        *Inode
		mode     uint32
		want     uint32
		wantErrn syscall.Errno
	}{
		{"owner", alice, ino(file | 0o644), 0o600, 0o600, 0},
		{"owner in the group keeps setgid", alice, ino(file | 0o644), 0o2755, 0o2755, 0},
		{"owner not in the group loses setgid", alice, &Inode{Mode: file, Uid: 1000, Gid: 7}, 0o2755, 0o755, 0},
		{"group member", bob, ino(file | 0o666), 0o600, 0, syscall.EPERM},
		{"other", carol, ino(file | 0o666), 0o600, 0, syscall.EPERM},
		{"root not in the group keeps setgid", root, ino(file), 0o2755, 0o2755, 0},
	} {
		got, err := Chmod(tc.c, tc.n, tc.mode)
		if errnoOf(err) != tc.wantErrn || got != tc.want {
			t.Errorf("%s: %o, %v; want %o, %v", tc.name, got, err, tc.want, tc.wantErrn)
		}
	}
}

func TestChown(t *testing.T) {
	for _, tc := range []struct {
		name           string
		c              *Cred
		n              *Inode
		uid, gid       uint32
		setUID, setGID bool
		want           uint32
		wantErrn       syscall.Errno
	}{
		{"owner gives the file away", alice, ino(file | 0o644), 1001, 0, true, false, 0, syscall.EPERM},
		{"owner chowns to itself", alice, ino(file | 0o644), 1000, 0, true, false, 0o644, 0},
		{"owner to a group it is not in", alice, ino(file | 0o644), 0, 7, false, true, 0, syscall.EPERM},
		{"owner to its own group", alice, &Inode{Mode: file | 0o644, Uid: 1000, Gid: 7}, 0, 100, false, true, 0o644, 0},
		{"owner of the file, member through a supplementary group", bob, &Inode{Mode: file | 0o644, Uid: 1001, Gid: 1001}, 0, 100, false, true, 0o644, 0},
		{"group member changes the group", bob, ino(file | 0o664), 0, 1001, false, true, 0, syscall.EPERM},
		{"root gives away", root, ino(file | 0o644), 1002, 1002, true, true, 0o644, 0},
		{"setuid cleared even by root", root, ino(file | 0o4755), 1002, 0, true, false, 0o755, 0},
		{"setgid-executable cleared", alice, ino(file | 0o2775), 0, 100, false, true, 0o775, 0},
		{"setgid without group exec kept", alice, ino(file | 0o2764), 0, 100, false, true, 0o2764, 0},
		{"directory keeps its bits", root, ino(dir | 0o6775), 1002, 0, true, false, 0o6775, 0},
	} {
		got, err := Chown(tc.c, tc.n, tc.uid, tc.gid, tc.setUID, tc.setGID)
		if errnoOf(err) != tc.wantErrn || got != tc.want {
			t.Errorf("%s: %o, %v; want %o, %v", tc.name, got, err, tc.want, tc.wantErrn)
		}
	}
}

func TestUtimes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        *Cred
		n        *Inode
		explicit bool
		want     syscall.Errno
	}{
		{"owner, explicit", alice, ino(file | 0o400), true, 0},
		{"writer, now", bob, ino(file | 0o660), false, 0},
		{"writer, explicit", bob, ino(file | 0o660), true, syscall.EPERM},
		{"reader, now", carol, ino(file | 0o644), false, syscall.EACCES},
		{"root, explicit", root, ino(file), true, 0},
	} {
		if got := errnoOf(Utimes(tc.c, tc.n, tc.explicit)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKillPriv(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Cred
		n    *Inode
		want uint32
	}{
		{"setuid goes", bob, ino(file | 0o4766), 0o766},
		{"setgid-executable goes", bob, ino(file | 0o2776), 0o776},
		{"setgid without group exec stays for a member", bob, ino(file | 0o2766), 0o2766},
		{"setgid without group exec goes for a non-member", carol, ino(file | 0o2766), 0o766},
		{"root keeps both", root, ino(file | 0o6777), 0o6777},
	} {
		if got := KillPriv(tc.c, tc.n); got != tc.want {
			t.Errorf("%s: %o, want %o", tc.name, got, tc.want)
		}
	}
	if !DropsPrivOnly(ino(file|0o6755), 0o755) || DropsPrivOnly(ino(file|0o6755), 0o777) || DropsPrivOnly(ino(file|0o755), 0o755) {
		t.Error("DropsPrivOnly: wrong answer")
	}
}

func TestNew(t *testing.T) {
	sgid := &Inode{Mode: dir | 0o2775, Uid: 0, Gid: 100}
	for _, tc := range []struct {
		name     string
		c        *Cred
		dir      *Inode
		mode     uint32
		isDir    bool
		gid, per uint32
	}{
		{"plain directory: caller's group", carol, ino(dir | 0o777), 0o644, false, 1002, 0o644},
		{"setgid directory: its group", carol, sgid, 0o644, false, 100, 0o644},
		{"setgid directory: subdirectory inherits setgid", carol, sgid, 0o755, true, 100, 0o2755},
		{"setgid-executable file by a non-member", carol, sgid, 0o2755, false, 100, 0o755},
		{"setgid-executable file by a member", bob, sgid, 0o2755, false, 100, 0o2755},
	} {
		gid, per := New(tc.c, tc.dir, tc.mode, tc.isDir)
		if gid != tc.gid || per != tc.per {
			t.Errorf("%s: gid %d mode %o, want %d %o", tc.name, gid, per, tc.gid, tc.per)
		}
	}
}

func TestXattr(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *Cred
		n     *Inode
		attr  string
		write bool
		want  syscall.Errno
	}{
		{"user. by a writer", bob, ino(file | 0o660), "user.a", true, 0},
		{"user. by a reader", carol, ino(file | 0o644), "user.a", true, syscall.EACCES},
		{"user. read by a non-reader", carol, ino(file | 0o600), "user.a", false, syscall.EACCES},
		{"user. on a symbolic link", alice, ino(link | 0o777), "user.a", true, syscall.EPERM},
		{"user. on another's sticky directory", bob, ino(dir | 0o1777), "user.a", true, syscall.EPERM},
		{"trusted. by the owner", alice, ino(file | 0o600), "trusted.a", true, syscall.EPERM},
		{"trusted. read by the owner", alice, ino(file | 0o600), "trusted.a", false, syscall.ENODATA},
		{"trusted. by root", root, ino(file), "trusted.a", true, 0},
		{"security. by the owner", alice, ino(file | 0o600), "security.a", true, syscall.EPERM},
		{"security. read by anyone", carol, ino(file), "security.a", false, 0},
	} {
		if got := errnoOf(Xattr(tc.c, tc.n, tc.attr, tc.write)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if XattrVisible(alice, "trusted.a") || !XattrVisible(root, "trusted.a") || !XattrVisible(alice, "user.a") {
		t.Error("XattrVisible: wrong answer")
	}
}
