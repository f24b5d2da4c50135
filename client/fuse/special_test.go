package fuse

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// specialUsers are two unprivileged accounts: the owner of special files in
// a sticky directory, and another user.
var specialUsers = []string{"stspecial_a", "stspecial_b"}

// specialAccount creates name when missing and returns its uid and gid.
func specialAccount(t *testing.T, name string) (uid, gid int) {
	t.Helper()
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// runAs runs a command as uid/gid with no supplementary groups and returns
// its combined output and error.
func runAs(uid, gid int, name string, args ...string) (string, error) {
	a := append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", "--", name}, args...)
	out, err := exec.Command("setpriv", a...).CombinedOutput()
	return string(out), err
}

// TestSpecialFiles creates each kind of special file through the mount
// with mknod(2) and checks what ls -l and stat would show: its type, mode
// and device number, then chmod, chown, a hard link, renames (in a sticky
// directory too, as its owner and as another user) and unlink.
func TestSpecialFiles(t *testing.T) {
	_, s := startMount(t, 2)
	auid, agid := specialAccount(t, specialUsers[0])
	buid, bgid := specialAccount(t, specialUsers[1])
	// t.TempDir's directories are root's only: let the users reach the mount.
	for d := filepath.Dir(s.Dir()); d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sticky := filepath.Join(s.Dir(), "sticky")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	if st := lstatT(t, sticky); st.Mode != syscall.S_IFDIR|0o1777 {
		t.Fatalf("the sticky directory has mode %#o", st.Mode)
	}
	for _, tc := range []struct {
		name         string
		typ          uint32
		major, minor uint32
	}{
		{"fifo", syscall.S_IFIFO, 0, 0},
		{"char", syscall.S_IFCHR, 1, 3},        // /dev/null's numbers
		{"block", syscall.S_IFBLK, 259, 70000}, // a minor past 8 bits and a major past 8 bits
		{"socket", syscall.S_IFSOCK, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(s.Dir(), tc.name)
			if err := syscall.Mknod(p, tc.typ|0o640, int(unix.Mkdev(tc.major, tc.minor))); err != nil {
				t.Fatalf("mknod %s: %v", p, err)
			}
			st := lstatT(t, p)
			if st.Mode != tc.typ|0o640 {
				t.Errorf("mode of %s is %#o, want %#o", p, st.Mode, tc.typ|0o640)
			}
			if maj, min := unix.Major(st.Rdev), unix.Minor(st.Rdev); maj != tc.major || min != tc.minor {
				t.Errorf("device of %s is %d,%d, want %d,%d", p, maj, min, tc.major, tc.minor)
			}
			if st.Size != 0 || st.Nlink != 1 {
				t.Errorf("%s: size %d, %d links, want 0 and 1", p, st.Size, st.Nlink)
			}

			if err := os.Chmod(p, 0o604); err != nil {
				t.Fatalf("chmod: %v", err)
			}
			if err := os.Lchown(p, auid, agid); err != nil {
				t.Fatalf("chown: %v", err)
			}
			st = lstatT(t, p)
			if st.Mode != tc.typ|0o604 || int(st.Uid) != auid || int(st.Gid) != agid {
				t.Errorf("after chmod and chown: mode %#o owner %d:%d, want %#o %d:%d", st.Mode, st.Uid, st.Gid, tc.typ|0o604, auid, agid)
			}

			link := p + ".link"
			if err := os.Link(p, link); err != nil {
				t.Fatalf("link: %v", err)
			}
			if l := lstatT(t, link); l.Ino != st.Ino || l.Nlink != 2 || l.Mode != st.Mode || l.Rdev != st.Rdev {
				t.Errorf("link: ino %d, %d links, mode %#o, rdev %#x; want ino %d, 2 links, mode %#o, rdev %#x", l.Ino, l.Nlink, l.Mode, l.Rdev, st.Ino, st.Mode, st.Rdev)
			}
			moved := p + ".moved"
			if err := os.Rename(p, moved); err != nil {
				t.Fatalf("rename: %v", err)
			}
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lstat of the old name after rename: %v, want ENOENT", err)
			}
			if m := lstatT(t, moved); m.Ino != st.Ino || m.Mode != st.Mode {
				t.Errorf("renamed: ino %d mode %#o, want %d %#o", m.Ino, m.Mode, st.Ino, st.Mode)
			}

			// In a sticky directory, only the file's owner (or root) renames it.
			inSticky := filepath.Join(sticky, tc.name)
			if err := os.Rename(moved, inSticky); err != nil {
				t.Fatalf("rename into the sticky directory: %v", err)
			}
			if out, err := runAs(buid, bgid, "mv", "-T", inSticky, inSticky+".b"); err == nil || !strings.Contains(out, "Operation not permitted") {
				t.Errorf("another user renamed %s in a sticky directory: %v: %s", inSticky, err, out)
			}
			if out, err := runAs(auid, agid, "mv", "-T", inSticky, inSticky+".a"); err != nil {
				t.Errorf("the owner could not rename %s in a sticky directory: %v: %s", inSticky, err, out)
			}
			if m := lstatT(t, inSticky+".a"); m.Ino != st.Ino {
				t.Errorf("renamed in the sticky directory: ino %d, want %d", m.Ino, st.Ino)
			}

			for _, name := range []string{inSticky + ".a", link} {
				if err := os.Remove(name); err != nil {
					t.Fatalf("unlink: %v", err)
				}
				if _, err := os.Lstat(name); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("lstat after unlink of %s: %v, want ENOENT", name, err)
				}
			}
		})
	}

	t.Run("devices are root's", func(t *testing.T) {
		dev := filepath.Join(sticky, "mine")
		out, err := runAs(auid, agid, "mknod", dev, "c", "1", "3")
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("a user made a device node: %v: %s", err, out)
		}
		if out, err := runAs(auid, agid, "mkfifo", "-m", "600", dev); err != nil {
			t.Fatalf("a user could not make a FIFO: %v: %s", err, out)
		}
		if st := lstatT(t, dev); st.Mode != syscall.S_IFIFO|0o600 || int(st.Uid) != auid {
			t.Errorf("the user's FIFO: mode %#o owner %d, want %#o %d", st.Mode, st.Uid, syscall.S_IFIFO|0o600, auid)
		}
	})
}

// TestFIFO checks that a FIFO on the mount behaves as a pipe: a writer
// that opens it without a reader gets ENXIO, and bytes written reach the
// reader.
func TestFIFO(t *testing.T) {
	_, s := startMount(t, 2)
	p := filepath.Join(s.Dir(), "pipe")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK, 0); !errors.Is(err, unix.ENXIO) {
		if err == nil {
			_ = unix.Close(fd)
		}
		t.Fatalf("open(O_WRONLY|O_NONBLOCK) of a FIFO with no reader: %v, want ENXIO", err)
	}
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("open the reader: %v", err)
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open the writer with a reader: %v", err)
	}
	if _, err := w.WriteString("through the pipe\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "through the pipe\n" {
		t.Fatalf("read from the FIFO: %q, %v", line, err)
	}
}

// TestUnixSocket binds a UNIX socket on the mount in this process and
// connects to it from another process.
func TestUnixSocket(t *testing.T) {
	_, s := startMount(t, 2)
	p := filepath.Join(s.Dir(), "sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("bind a socket on the mount: %v", err)
	}
	defer l.Close()
	if st := lstatT(t, p); st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		t.Errorf("the bound path has mode %#o, want a socket", st.Mode)
	}
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			got <- err.Error()
			return
		}
		_, _ = c.Write([]byte("hello " + line))
		got <- line
	}()
	cmd := exec.Command(os.Args[0], p, "7", "0")
	cmd.Env = append(os.Environ(), helperEnv+"=unixconnect")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the other process could not connect: %v: %s", err, out)
	}
	if line := <-got; line != "client 7\n" {
		t.Errorf("the server read %q, want %q", line, "client 7\n")
	}
	if string(out) != "hello client 7\n" {
		t.Errorf("the other process read %q, want %q", out, "hello client 7\n")
	}
}

// unixConnect connects to the UNIX socket at path, says who it is and
// prints the reply (the helper of TestUnixSocket).
func unixConnect(path string, id int) error {
	c, err := net.DialTimeout("unix", path, time.Minute)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := fmt.Fprintf(c, "client %d\n", id); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(line)
	return err
}

// lstatT is lstat(2) that fails the test.
func lstatT(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return &st
}
