// Command guest runs inside the qemu guest of package nfsguest against the
// kernel's NFS mount: guest MOUNTPOINT SCENARIO. It prints one "GUEST OK
// step" or "GUEST FAIL step: why" line per step and exits non-zero if a
// step failed.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/internal/nfsguest"
)

var failed bool

func step(name string, err error) {
	if err != nil {
		failed = true
		fmt.Printf("GUEST FAIL %s: %v\n", name, err)
		return
	}
	fmt.Printf("GUEST OK %s\n", name)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Println("GUEST FAIL usage: guest MOUNTPOINT SCENARIO")
		os.Exit(2)
	}
	mnt := os.Args[1]
	switch os.Args[2] {
	case "basic":
		basic(mnt)
	case "lock":
		lock(mnt)
	case "hold":
		hold(mnt)
	case "bigio":
		bigio(mnt, os.Args[3:])
	case "mirror":
		mirror(mnt)
	case "move":
		move(mnt)
	case "cut":
		cut(mnt)
	default:
		step("scenario", fmt.Errorf("unknown scenario %q", os.Args[2]))
	}
	if failed {
		os.Exit(1)
	}
}

func dropCaches() error {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}

func writeFile(p string, data []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func same(p string, want []byte) error {
	got, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%s: %d bytes differ from the %d expected, from offset %d", p, len(got), len(want), i)
	}
	return nil
}

// basic: the namespace and data round trip with the host.
func basic(mnt string) {
	dir := filepath.Join(mnt, "nfsdir")
	step("mkdir", os.Mkdir(dir, 0o755))
	data := nfsguest.Pattern(1, 3<<20+123)
	step("write", writeFile(filepath.Join(dir, "from-nfs.bin"), data))
	step("read-host-file", same(filepath.Join(mnt, "from-host.bin"), nfsguest.Pattern(2, 2<<20+7)))
	step("drop-caches", dropCaches())
	step("read-back", same(filepath.Join(dir, "from-nfs.bin"), data))
	small := filepath.Join(dir, "small")
	step("write-small", writeFile(small, []byte("hello strata\n")))
	step("rename", os.Rename(small, filepath.Join(dir, "renamed")))
	step("symlink", os.Symlink("renamed", filepath.Join(dir, "link")))
	t, err := os.Readlink(filepath.Join(dir, "link"))
	if err == nil && t != "renamed" {
		err = fmt.Errorf("readlink = %q", t)
	}
	step("readlink", err)
	step("read-through-link", same(filepath.Join(dir, "link"), []byte("hello strata\n")))
	step("chmod", os.Chmod(filepath.Join(dir, "renamed"), 0o600))
	st, err := os.Stat(filepath.Join(dir, "renamed"))
	if err == nil && st.Mode().Perm() != 0o600 {
		err = fmt.Errorf("mode %v after chmod 600", st.Mode())
	}
	step("stat-mode", err)
	step("truncate", os.Truncate(filepath.Join(dir, "renamed"), 5))
	step("read-truncated", same(filepath.Join(dir, "renamed"), []byte("hello")))
	ents, err := os.ReadDir(dir)
	if err == nil && len(ents) != 3 {
		err = fmt.Errorf("readdir: %d entries, want 3", len(ents))
	}
	step("readdir", err)
	_, err = os.Stat(filepath.Join(dir, "missing"))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	} else if err == nil {
		err = errors.New("a missing file exists")
	}
	step("enoent", err)
	step("link", os.Link(filepath.Join(dir, "renamed"), filepath.Join(dir, "hard")))
	step("unlink", os.Remove(filepath.Join(dir, "hard")))
	sub := filepath.Join(dir, "sub")
	step("mkdir-sub", os.Mkdir(sub, 0o700))
	step("rmdir", os.Remove(sub))
	err = os.Remove(dir)
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		err = nil
	} else if err == nil {
		err = errors.New("a non-empty directory was removed")
	}
	step("rmdir-notempty", err)
	for i := 0; i < 40; i++ { // more entries than one READDIR reply holds
		if err = writeFile(filepath.Join(sub+"many", fmt.Sprintf("f%03d", i)), nil); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				_ = os.Mkdir(sub+"many", 0o755)
				err = writeFile(filepath.Join(sub+"many", fmt.Sprintf("f%03d", i)), nil)
			}
			if err != nil {
				break
			}
		}
	}
	if err == nil {
		ents, err = os.ReadDir(sub + "many")
		if err == nil && len(ents) != 40 {
			err = fmt.Errorf("readdir: %d entries, want 40", len(ents))
		}
	}
	step("readdir-many", err)
	special(dir)
}

// special: a FIFO made through NFS (CREATE NF4FIFO) is one; on a 4.2
// mount, user extended attributes (RFC 8276) set, read and listed, and
// fallocate (ALLOCATE) extends a file.
func special(dir string) {
	fifo := filepath.Join(dir, "fifo")
	err := syscall.Mkfifo(fifo, 0o640)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Lstat(fifo); err == nil && st.Mode()&os.ModeNamedPipe == 0 {
			err = fmt.Errorf("mkfifo made a %v", st.Mode())
		}
	}
	step("mkfifo", err)
	mounts, _ := os.ReadFile("/proc/mounts")
	if !bytes.Contains(mounts, []byte("vers=4.2")) {
		return
	}
	file := filepath.Join(dir, "renamed")
	step("setxattr", syscall.Setxattr(file, "user.color", []byte("blue"), 0))
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(file, "user.color", buf)
	if err == nil && string(buf[:n]) != "blue" {
		err = fmt.Errorf("getxattr user.color = %q", buf[:n])
	}
	step("getxattr", err)
	n, err = syscall.Listxattr(file, buf)
	if err == nil && !bytes.Contains(buf[:n], []byte("user.color\x00")) {
		err = fmt.Errorf("listxattr = %q, no user.color", buf[:n])
	}
	step("listxattr", err)
	_, err = syscall.Getxattr(file, "user.missing", buf)
	if errors.Is(err, syscall.ENODATA) {
		err = nil
	} else if err == nil {
		err = errors.New("a missing attribute has a value")
	}
	step("getxattr-missing", err)
	f, err := os.Create(filepath.Join(dir, "alloc"))
	if err == nil {
		err = syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20)
		var st os.FileInfo
		if err == nil {
			if st, err = f.Stat(); err == nil && st.Size() != 1<<20 {
				err = fmt.Errorf("size %d after fallocate of 1 MiB", st.Size())
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	step("fallocate", err)
}

func setlk(f *os.File, typ int16, start, n int64) error {
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: start, Len: n}
	return syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
}

// lock: the host holds bytes [0,100) of /lockfile through FUSE; the
// guest's lock on them must fail, its lock on [200,300) must hold until
// the host, which tries it through FUSE, writes "release" into
// /lock-held (an open revalidates a file's data; a missing name could stay
// cached as missing for acdirmin).
func lock(mnt string) {
	f, err := os.OpenFile(filepath.Join(mnt, "lockfile"), os.O_RDWR, 0)
	step("open-lockfile", err)
	if err != nil {
		return
	}
	defer f.Close()
	err = setlk(f, syscall.F_WRLCK, 0, 100)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		err = nil
	} else if err == nil {
		err = errors.New("locked a range the host holds through FUSE")
	}
	step("conflict-with-fuse-lock", err)
	step("lock-free-range", setlk(f, syscall.F_WRLCK, 200, 100))
	step("announce", writeFile(filepath.Join(mnt, "lock-held"), nil))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if b, err := os.ReadFile(filepath.Join(mnt, "lock-held")); err == nil && string(b) == "release" {
			break
		}
		if time.Now().After(deadline) {
			step("wait-release", errors.New("the host never wrote release into lock-held"))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	step("unlock", setlk(f, syscall.F_UNLCK, 200, 100))
}

// hold: lock [0,10) of /lockfile and keep it until the VM is killed.
func hold(mnt string) {
	f, err := os.OpenFile(filepath.Join(mnt, "lockfile"), os.O_RDWR, 0)
	step("open-lockfile", err)
	if err != nil {
		return
	}
	step("lock", setlk(f, syscall.F_WRLCK, 0, 10))
	step("announce", writeFile(filepath.Join(mnt, "hold-locked"), nil))
	for {
		time.Sleep(time.Hour)
	}
}

// bigio: write then read a file of the given MiB with 1 MiB calls, timed,
// through the kernel's NFS mount; then, with the arguments "strata MDS
// SECRETHEX", the same through a `strata mount` in this guest (strata.go).
func bigio(mnt string, args []string) {
	n := 64
	if len(args) > 0 {
		fmt.Sscan(args[0], &n)
	}
	timedIO(filepath.Join(mnt, "big.bin"), n, "")
	if len(args) == 4 && args[1] == "strata" {
		strataIO(n, args[2], args[3])
	}
}

// timedIO writes n MiB to p with 1 MiB calls and fsync, drops the
// caches, reads it back and checks it, and prints the seconds of each as
// "BENCH {prefix}write_mib=N seconds=S" and "{prefix}read_mib"; a prefix
// says p is on the in-guest FUSE mount. While it runs, a "PROGRESS" line
// every 20 s says how far it got and where the written pages are, and a
// stall powers the guest off (progress.go).
func timedIO(p string, n int, prefix string) {
	buf := nfsguest.Pattern(3, 1<<20)
	var done atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch(prefix+"io", prefix != "", &done, 20*time.Second, stop)
	}()
	defer func() {
		close(stop)
		<-watched
	}()
	t0 := time.Now()
	f, err := os.Create(p)
	if err == nil {
		for i := 0; i < n && err == nil; i++ {
			_, err = f.Write(buf)
			done.Add(1)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	step(prefix+"bigwrite", err)
	fmt.Printf("GUEST BENCH %swrite_mib=%d seconds=%.3f\n", prefix, n, time.Since(t0).Seconds())
	_ = dropCaches()
	done.Store(0)
	t0 = time.Now()
	f, err = os.Open(p)
	if err == nil {
		got := make([]byte, 1<<20)
		for i := 0; i < n && err == nil; i++ {
			if _, err = f.ReadAt(got, int64(i)<<20); err == nil && !bytes.Equal(got, buf) {
				err = fmt.Errorf("MiB %d differs", i)
			}
			done.Add(1)
		}
		f.Close()
	}
	step(prefix+"bigread", err)
	fmt.Printf("GUEST BENCH %sread_mib=%d seconds=%.3f\n", prefix, n, time.Since(t0).Seconds())
}

// cut: write 6 MiB to /cut.bin and close it, drop the caches, then open
// it for reading and read it all through a descriptor that stays open
// (the kernel holds a read layout and the file's pages); tell the host (/cut-marker =
// "started"), which cuts the file to 1 MiB through Strata ("cut"). A new
// open then sees 1 MiB holding the first MiB written, and the old
// descriptor reads nothing past it; tell the host ("read-cut"), which
// extends the file to 6 MiB again ("extended"): the 5 MiB past the cut
// read as zeros, never as the bytes written there before the cut. (The
// descriptor is read-only: while a Linux client has a file open for
// writing it keeps its cached pages whatever the server's change
// attribute says, docs/nfs.md.)
func cut(mnt string) {
	const size, at = 6 << 20, 1 << 20
	data := nfsguest.Pattern(6, size)
	p := filepath.Join(mnt, "cut.bin")
	marker := filepath.Join(mnt, "cut-marker")
	err := writeFile(p, data)
	if err == nil {
		err = dropCaches() // the reads below take a layout
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(p)
	}
	if err == nil {
		defer f.Close()
		got := make([]byte, size)
		if _, err = f.ReadAt(got, 0); err == nil && !bytes.Equal(got, data) {
			err = errors.New("the 6 MiB read back differ from those written")
		}
	}
	step("write-read", err)
	if err != nil {
		return
	}
	step("announce", writeFile(marker, []byte("started")))
	step("wait-cut", waitContent(marker, "cut", 5*time.Minute))
	step("read-after-cut", same(p, data[:at]))
	n, err := f.ReadAt(make([]byte, 4096), at)
	if errors.Is(err, io.EOF) && n == 0 {
		err = nil
	} else if err == nil {
		err = fmt.Errorf("the open descriptor read %d bytes past the cut", n)
	}
	step("old-descriptor-eof", err)
	step("announce-read", writeFile(marker, []byte("read-cut")))
	step("wait-extended", waitContent(marker, "extended", 5*time.Minute))
	want := append(append([]byte(nil), data[:at]...), make([]byte, size-at)...)
	step("read-after-extend", same(p, want))
}

// waitContent polls until file p holds want (an open revalidates the
// file's data, so the host's write is seen), for at most d.
func waitContent(p, want string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if b, err := os.ReadFile(p); err == nil && string(b) == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never held %q", p, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mirror: write the first 3 MiB of /mirror.bin, tell the host (/mw-marker =
// "started"), wait until it has killed a data server ("killed"), write
// 3 MiB more, then read the whole file back after dropping caches.
func mirror(mnt string) { twoHalves(mnt, "mirror.bin", 4, "mw-marker", "killed", 3*time.Minute) }

// move: write the first 3 MiB of /move.bin and keep it open (with its
// write layout), tell the host (/mv-marker = "started"), wait until the
// host has moved the file's component to another data server ("moved"),
// write 3 MiB more through the same open file, then read the whole file
// back after dropping caches.
func move(mnt string) { twoHalves(mnt, "move.bin", 5, "mv-marker", "moved", 8*time.Minute) }

// twoHalves writes the first half of file name (pattern seed), tells the
// host through marker ("started"), waits up to d until the host writes
// event into the marker, writes the second half through the same open
// file, and reads the whole file back after dropping caches.
func twoHalves(mnt, name string, seed uint64, marker, event string, d time.Duration) {
	const half = 3 << 20
	data := nfsguest.Pattern(seed, 2*half)
	p := filepath.Join(mnt, name)
	f, err := os.Create(p)
	if err == nil {
		_, err = f.Write(data[:half])
	}
	if err == nil {
		err = f.Sync()
	}
	step("write-first-half", err)
	if err != nil {
		return
	}
	step("announce", writeFile(filepath.Join(mnt, marker), []byte("started")))
	step("wait-"+event, waitContent(filepath.Join(mnt, marker), event, d))
	t0 := time.Now()
	_, err = f.Write(data[half:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	step("write-second-half", err)
	fmt.Printf("GUEST BENCH second_half_seconds=%.3f\n", time.Since(t0).Seconds())
	step("drop-caches", dropCaches())
	step("read-back", same(p, data))
}
