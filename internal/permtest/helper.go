package permtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// HelperEnv, when set in the environment of the test binary, makes it run
// Helper instead of the tests.
const HelperEnv = "STRATA_PERMTEST_HELPER"

// Job is what one helper process does: every operation on every fixture
// of Dirs, through the OS (local directory or FUSE mount) or through the
// client library (Dirs are then Strata paths).
type Job struct {
	Lib   bool
	MDS   string
	Munge string // munged's socket: the library proves the helper's uid with MUNGE
	Dirs  []string
	Args  Args
	Ops   []string // only these operations; none: all
}

// Args are the ids the operations use.
type Args struct {
	ChownUid uint32 // chown gives the file to this uid
	ChgrpGid uint32 // chgrp gives the file this group
}

// Result is the errno of each operation on each fixture: Result[dir][op].
type Result map[string]map[string]int

// Helper reads a Job on r, runs it as the process's user, and writes its
// Result on w.
func Helper(r io.Reader, w io.Writer) error {
	var j Job
	if err := json.NewDecoder(r).Decode(&j); err != nil {
		return fmt.Errorf("helper: decode job: %w", err)
	}
	syscall.Umask(0)
	var b backend = osBackend{}
	if j.Lib {
		cfg := client.DefaultConfig()
		cfg.MDS = j.MDS
		cfg.Timeout = 30 * time.Second
		cfg.Munge = &identity.Munge{Socket: j.Munge}
		c, err := client.New(cfg)
		if err != nil {
			return fmt.Errorf("helper: client: %w", err)
		}
		defer c.Close()
		b = libBackend{c: c}
	}
	res := Result{}
	for _, dir := range j.Dirs {
		res[dir] = map[string]int{}
		for _, op := range ops {
			if len(j.Ops) > 0 && !slices.Contains(j.Ops, op.name) {
				continue
			}
			res[dir][op.name] = int(errnoOf(op.fn(b, dir, j.Args)))
		}
	}
	return json.NewEncoder(w).Encode(res)
}

// errnoOf is err's errno: 0 for nil, EIO for an error that carries none.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var n syscall.Errno
	if errors.As(err, &n) {
		return n
	}
	return rpc.ToErrno(err)
}

// backend is how a helper does each operation.
type backend interface {
	lstat(p string) error
	readdir(p string) error
	open(p string, flag int, mode uint32) error
	write(p string) error
	createWrite(p string, mode uint32) error
	mkdir(p string, mode uint32) error
	symlink(target, p string) error
	link(old, p string) error
	unlink(p string) error
	rmdir(p string) error
	rename(old, p string) error
	chmod(p string, mode uint32) error
	chown(p string, uid, gid uint32) error
	truncate(p string) error
	touch(p string) error
	utimes(p string, t time.Time) error
	setxattr(p, name string) error
}

// ops are the operations of the matrix, in order; each touches its own
// entries of a fixture (fixture.go).
var ops = []struct {
	name string
	fn   func(b backend, d string, a Args) error
}{
	{"lookup", func(b backend, d string, _ Args) error { return b.lstat(d + "/d/f_lookup") }},
	{"readdir", func(b backend, d string, _ Args) error { return b.readdir(d + "/d") }},
	{"open-read", func(b backend, d string, _ Args) error { return b.open(d+"/d/f_openr", os.O_RDONLY, 0) }},
	{"open-write", func(b backend, d string, _ Args) error { return b.open(d+"/d/f_openw", os.O_WRONLY, 0) }},
	{"write", func(b backend, d string, _ Args) error { return b.write(d + "/d/f_write") }},
	{"create", func(b backend, d string, _ Args) error {
		return b.open(d+"/d/new_file", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o2775)
	}},
	{"create-readonly-and-write", func(b backend, d string, _ Args) error {
		return b.createWrite(d+"/d/new_readonly", 0o444)
	}},
	{"create-existing", func(b backend, d string, _ Args) error {
		return b.open(d+"/d/f_creat", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}},
	{"mkdir", func(b backend, d string, _ Args) error { return b.mkdir(d+"/d/new_dir", 0o755) }},
	{"symlink", func(b backend, d string, _ Args) error { return b.symlink("f_lookup", d+"/d/new_symlink") }},
	{"link", func(b backend, d string, _ Args) error { return b.link(d+"/d/f_link", d+"/e/linked") }},
	{"unlink", func(b backend, d string, _ Args) error { return b.unlink(d + "/d/f_unlink") }},
	{"rmdir", func(b backend, d string, _ Args) error { return b.rmdir(d + "/d/sub_rmdir") }},
	{"rename-across", func(b backend, d string, _ Args) error { return b.rename(d+"/d/f_rename", d+"/e/renamed") }},
	{"rename-dir-across", func(b backend, d string, _ Args) error { return b.rename(d+"/d/sub_rename", d+"/e/renamed_dir") }},
	{"rename-into", func(b backend, d string, _ Args) error { return b.rename(d+"/e/f_into", d+"/d/moved_in") }},
	{"chmod", func(b backend, d string, _ Args) error { return b.chmod(d+"/d/f_chmod", 0o2751) }},
	{"chown", func(b backend, d string, a Args) error { return b.chown(d+"/d/f_chown", a.ChownUid, client.NoChange) }},
	{"chgrp", func(b backend, d string, a Args) error { return b.chown(d+"/d/f_chgrp", client.NoChange, a.ChgrpGid) }},
	{"truncate", func(b backend, d string, _ Args) error { return b.truncate(d + "/d/f_trunc") }},
	{"utimes-now", func(b backend, d string, _ Args) error { return b.touch(d + "/d/f_utnow") }},
	{"utimes-explicit", func(b backend, d string, _ Args) error {
		return b.utimes(d+"/d/f_utset", time.Unix(1_000_000_000, 0))
	}},
	{"setxattr-user", func(b backend, d string, _ Args) error { return b.setxattr(d+"/d/f_xuser", "user.perm") }},
	{"setxattr-trusted", func(b backend, d string, _ Args) error {
		return b.setxattr(d+"/d/f_xtrusted", "trusted.perm")
	}},
	{"setxattr-security", func(b backend, d string, _ Args) error {
		return b.setxattr(d+"/d/f_xsecurity", "security.perm")
	}},
	{"setxattr-dir-user", func(b backend, d string, _ Args) error { return b.setxattr(d+"/d", "user.perm") }},
}

// osBackend does the operations with system calls: on a local directory,
// or on a FUSE mount.
type osBackend struct{}

func (osBackend) lstat(p string) error {
	var st syscall.Stat_t
	return syscall.Lstat(p, &st)
}

func (osBackend) readdir(p string) error {
	_, err := os.ReadDir(p)
	return err
}

func (osBackend) open(p string, flag int, mode uint32) error {
	fd, err := syscall.Open(p, flag|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

func (osBackend) write(p string) error {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = syscall.Write(fd, []byte("written\n"))
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// createWrite creates p with mode and writes through the descriptor the
// create returned (writable even when mode is not).
func (osBackend) createWrite(p string, mode uint32) error {
	fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	_, err = syscall.Write(fd, []byte("written\n"))
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	return err
}

func (osBackend) mkdir(p string, mode uint32) error { return syscall.Mkdir(p, mode) }
func (osBackend) symlink(target, p string) error    { return syscall.Symlink(target, p) }
func (osBackend) link(old, p string) error          { return syscall.Link(old, p) }
func (osBackend) unlink(p string) error             { return syscall.Unlink(p) }
func (osBackend) rmdir(p string) error              { return syscall.Rmdir(p) }
func (osBackend) rename(old, p string) error        { return syscall.Rename(old, p) }
func (osBackend) chmod(p string, mode uint32) error { return syscall.Chmod(p, mode) }
func (osBackend) truncate(p string) error           { return syscall.Truncate(p, 0) }
func (osBackend) setxattr(p, name string) error     { return syscall.Setxattr(p, name, []byte("v"), 0) }
func (osBackend) chown(p string, uid, gid uint32) error {
	return syscall.Lchown(p, int(int32(uid)), int(int32(gid)))
}

// touch is utimensat(AT_FDCWD, p, NULL, 0): both times to now.
func (osBackend) touch(p string) error {
	b, err := syscall.BytePtrFromString(p)
	if err != nil {
		return err
	}
	const atFDCWD = -100
	fdcwd := atFDCWD
	_, _, e := syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(fdcwd), uintptr(unsafe.Pointer(b)), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (osBackend) utimes(p string, t time.Time) error {
	ts := syscall.NsecToTimespec(t.UnixNano())
	return syscall.UtimesNano(p, []syscall.Timespec{ts, ts})
}

// libBackend does the operations with the client library, as the CLI does.
type libBackend struct{ c *client.Client }

func ctx() context.Context { return context.Background() }

func (l libBackend) lstat(p string) error { _, err := l.c.Lstat(ctx(), p); return err }

func (l libBackend) readdir(p string) error { _, err := l.c.ReadDir(ctx(), p); return err }

func (l libBackend) open(p string, flag int, mode uint32) error {
	f, err := l.c.OpenFile(ctx(), p, flag, mode)
	if err != nil {
		return err
	}
	return f.Close()
}

func (l libBackend) write(p string) error {
	f, err := l.c.OpenFile(ctx(), p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("written\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l libBackend) createWrite(p string, mode uint32) error {
	f, err := l.c.OpenFile(ctx(), p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("written\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l libBackend) mkdir(p string, mode uint32) error { return l.c.Mkdir(ctx(), p, mode) }
func (l libBackend) symlink(target, p string) error    { return l.c.Symlink(ctx(), target, p) }
func (l libBackend) link(old, p string) error          { return l.c.Link(ctx(), old, p) }
func (l libBackend) rename(old, p string) error        { return l.c.Rename(ctx(), old, p) }
func (l libBackend) chmod(p string, mode uint32) error { return l.c.Chmod(ctx(), p, mode) }
func (l libBackend) truncate(p string) error           { return l.c.Truncate(ctx(), p, 0) }
func (l libBackend) touch(p string) error              { return l.c.Touch(ctx(), p) }
func (l libBackend) chown(p string, uid, gid uint32) error {
	return l.c.Chown(ctx(), p, uid, gid)
}
func (l libBackend) utimes(p string, t time.Time) error { return l.c.Chtimes(ctx(), p, t, t) }
func (l libBackend) setxattr(p, name string) error {
	return l.c.SetXattr(ctx(), p, name, []byte("v"), 0)
}

// unlink and rmdir: the library's Remove picks the call by the entry's
// type; the kernel's unlink of a directory is EISDIR, rmdir of a file
// ENOTDIR, which Remove cannot give, so the matrix removes only what the
// call suits.
func (l libBackend) unlink(p string) error { return l.c.Remove(ctx(), p) }
func (l libBackend) rmdir(p string) error  { return l.c.Remove(ctx(), filepath.Clean(p)) }
