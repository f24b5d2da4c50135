package fuse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Server is a mounted Strata namespace. It serves kernel requests until
// the mount goes away: Unmount, `strata umount`, fusermount3 -u or
// umount(8).
type Server struct {
	dir    string
	server *gofuse.Server
	fsys   *fileSystem
	log    *slog.Logger
	cancel context.CancelFunc
	served chan struct{} // closed when go-fuse's Serve has returned: the connection has ended
	done   chan struct{} // closed when serving has ended and state is written back

	conn     kconn       // the kernel connection (conn.go)
	detached atomic.Bool // detached by a lazy Unmount: served until its holders let go
	letGo    *letGo      // bounds what is in flight once the connection ended
	wg       sync.WaitGroup
}

// goneGrace is how long a mount that left this mount namespace may still be
// held by another namespace before its connection is ended (abort.go).
const goneGrace = 3 * time.Second

// Mount mounts the namespace c talks to on the directory mountpoint and
// starts serving it. It first checks that the MDS answers (within
// opts.ProbeTimeout) and that mountpoint is a directory that is not a FUSE
// mount already, so a failure leaves nothing mounted. ctx bounds only the
// mounting; the mount lives until unmounted. c must outlive the Server.
func Mount(ctx context.Context, c *client.Client, mountpoint string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	dir, err := checkMountpoint(mountpoint)
	if err != nil {
		return nil, err
	}
	probeCtx, cancelProbe := context.WithTimeout(ctx, opts.ProbeTimeout)
	st, err := c.StatFS(probeCtx)
	cancelProbe()
	if err != nil {
		return nil, fmt.Errorf("fuse: the MDS does not answer: %w", err)
	}
	log := opts.Log.With("component", "fuse", "mountpoint", dir)
	if st.DSUp == 0 {
		log.Warn("no data server is up: file data cannot be read or written until one is")
	}

	life, cancel := context.WithCancel(context.Background())
	fsys := newFileSystem(life, c, opts)
	fsys.log = log
	fsys.errs.log = log
	root := &node{fsys: fsys}
	fsOpts := &fs.Options{
		MountOptions:   mountOptions(opts, log),
		AttrTimeout:    &opts.AttrTimeout,
		EntryTimeout:   &opts.EntryTimeout,
		RootStableAttr: &fs.StableAttr{Ino: rpc.RootIno, Mode: syscall.S_IFDIR},
		// Node ids are Strata inode numbers: the lock release at FLUSH
		// and RELEASE (rawFS) finds the inode from the request.
		ExternalNodeID:  true,
		NullPermissions: true,
	}
	raw := &rawFS{RawFileSystem: fs.NewNodeFS(root, fsOpts), fsys: fsys}
	server, err := gofuse.NewServer(raw, dir, &fsOpts.MountOptions)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fuse: mount %s: %w", dir, err)
	}
	s := &Server{dir: dir, server: server, fsys: fsys, log: log, cancel: cancel,
		served: make(chan struct{}), done: make(chan struct{}),
		letGo: &letGo{timeout: opts.UnmountTimeout, cancel: cancel}}
	go s.serve()
	if err := server.WaitMount(); err != nil {
		_ = unmount(dir, true)
		<-s.done
		return nil, fmt.Errorf("fuse: mount %s: %w", dir, err)
	}
	conn, err := connOf(dir)
	s.conn = conn
	if err == nil {
		s.wg.Add(1)
		go s.watch(goneGrace)
	} else {
		log.Warn("cannot tell the FUSE connection: an unmount that another mount namespace holds cannot be ended", "err", err)
	}
	s.tuneReadahead(opts.MaxReadahead)
	fsys.directMmap.Store(server.KernelSettings().Flags64()&gofuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	log.Info("mounted", "max_write", opts.MaxWrite, "direct_io", opts.DirectIO, "stream_min", opts.StreamMin, "streams", fsys.directMmap.Load(), "attr_timeout", opts.AttrTimeout, "entry_timeout", opts.EntryTimeout)
	return s, nil
}

// mountOptions are go-fuse's options for opts.
func mountOptions(opts Options, log *slog.Logger) gofuse.MountOptions {
	mo := gofuse.MountOptions{
		AllowOther:    opts.AllowOther,
		Options:       append([]string{"default_permissions"}, opts.Extra...),
		MaxWrite:      opts.MaxWrite,
		MaxReadAhead:  opts.MaxReadahead,
		MaxBackground: opts.MaxBackground,
		FsName:        opts.FsName,
		Name:          opts.Name,
		Debug:         opts.Debug,
		Logger:        slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		EnableLocks:   true,
		// Not IgnoreSecurityLabels: it answers the POSIX ACL names
		// ENODATA, which `ls -l` asks again of every file; the mount
		// answers them, and security.capability (asked before every
		// write), EOPNOTSUPP itself (xattrcache.go).
		// Running as root on a recent kernel, go-fuse would otherwise let
		// the kernel bypass the daemon for reads and writes.
		DisabledCapabilities: gofuse.CAP_PASSTHROUGH,
		// Shared mappings of files opened with FOPEN_DIRECT_IO; a kernel
		// without it refuses them (ENODEV): then only a DirectIO mount
		// opens files so, and no open streams (stream.go).
		ExtraCapabilities: gofuse.CAP_DIRECT_IO_ALLOW_MMAP,
	}
	return mo
}

// serve runs until the kernel connection ends, then writes back what is
// still open, giving up after UnmountTimeout (letgo.go).
func (s *Server) serve() {
	defer close(s.done)
	s.server.Serve()
	close(s.served)
	s.letGo.ended()
	s.detached.Store(false)
	s.fsys.shutdown()
	gaveUp := s.letGo.stop()
	s.cancel()
	if gaveUp {
		s.log.Warn("unmounted, but the MDS did not answer (no leader?): gave up on the requests in flight and the write back of files left open; what they had not committed is lost",
			"unmount_timeout", s.letGo.timeout)
		return
	}
	s.log.Info("unmounted")
}

// Dir returns the mount point (absolute, clean).
func (s *Server) Dir() string { return s.dir }

// Done is closed when the mount has gone away and serving has ended.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until the mount has gone away and serving has ended.
func (s *Server) Wait() {
	<-s.done
	s.wg.Wait()
}

// Unmount unmounts and waits for serving to end. While the mount is busy
// (a process has a file open or its working directory in it) it retries
// until ctx ends; then, with lazy, it detaches the mount and returns
// ErrDetached: the mount is gone from the namespace, and this Server
// serves the processes that still use it until they let go (Wait returns
// then). Without lazy it returns an error wrapping ErrBusy and the mount
// keeps working.
func (s *Server) Unmount(ctx context.Context, lazy bool) error {
	backoff := 20 * time.Millisecond
	for {
		err := unmount(s.dir, false)
		if err == nil || errors.Is(err, ErrNotMounted) {
			if ended, _ := s.conn.gone(); ended {
				s.letGo.ended()
			}
			return s.waitDone(ctx)
		}
		if !errors.Is(err, ErrBusy) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-s.done:
			t.Stop()
			return nil
		case <-t.C:
			backoff = min(2*backoff, 500*time.Millisecond)
			continue
		case <-ctx.Done():
			t.Stop()
		}
		if !lazy {
			return fmt.Errorf("unmount %s: %w", s.dir, ErrBusy)
		}
		s.detached.Store(true)
		if err := unmount(s.dir, true); err != nil && !errors.Is(err, ErrNotMounted) {
			s.detached.Store(false)
			return err
		}
		s.log.Info("mount was busy: detached it; it is served until its last user lets go")
		return fmt.Errorf("unmount %s: %w", s.dir, ErrDetached)
	}
}

// waitDone waits, after the mount left this namespace, for serving to end.
// A copy of the mount in another mount namespace (made by unshare or a
// container while it was mounted) keeps the connection open: when ctx ends
// first, waitDone ends the connection (Abort) and says so; only if that
// fails (not root) is the mount left served there, with ErrDetached.
func (s *Server) waitDone(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
	}
	if err := s.Abort(); err != nil {
		s.log.Warn("unmounted here, still mounted in another mount namespace, and its connection could not be ended: served until its last user lets go", "err", err)
		return fmt.Errorf("unmount %s: mounted in another mount namespace: %w", s.dir, ErrDetached)
	}
	s.log.Warn("unmounted here, but another mount namespace still held the mount: ended its FUSE connection; processes there get ENOTCONN")
	return nil
}

// Unmount unmounts the FUSE file system mounted on dir (as `strata umount`
// does), lazily (detached) if lazy is set. A busy mount gives an error
// wrapping ErrBusy and keeps working; a directory that is no FUSE mount
// gives ErrNotMounted.
func Unmount(dir string, lazy bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	m, err := findMount(filepath.Clean(abs))
	if err != nil {
		return err
	}
	if m == nil || !strings.HasPrefix(m.fstype, "fuse") {
		return fmt.Errorf("unmount %s: %w", abs, ErrNotMounted)
	}
	if err := unmount(m.dir, lazy); err != nil {
		return fmt.Errorf("unmount %s: %w", abs, err)
	}
	return nil
}

// unmount detaches dir: umount2(2) as root, else fusermount3 -u.
func unmount(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = unix.MNT_DETACH
		}
		err := unix.Unmount(dir, flags)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EBUSY):
			return ErrBusy
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return ErrNotMounted
		}
		return err
	}
	args := []string{"-u", dir}
	if lazy {
		args = []string{"-u", "-z", dir}
	}
	var stderr bytes.Buffer
	cmd := exec.Command("fusermount3", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		switch {
		case strings.Contains(msg, "busy"):
			return ErrBusy
		case strings.Contains(msg, "not found in /etc/mtab"), strings.Contains(msg, "not mounted"):
			return ErrNotMounted
		}
		return fmt.Errorf("fusermount3 -u: %s (%w)", msg, err)
	}
	return nil
}

// checkMountpoint returns mountpoint as an absolute clean path if it is a
// directory that is not a FUSE mount already.
func checkMountpoint(mountpoint string) (string, error) {
	if mountpoint == "" {
		return "", errors.New("fuse: no mount point given")
	}
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return "", err
	}
	dir := filepath.Clean(abs)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("fuse: mount point %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("fuse: mount point %s: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("fuse: mount point %s is not a directory", dir)
	}
	if m, err := findMount(dir); err == nil && m != nil && strings.HasPrefix(m.fstype, "fuse") {
		return "", fmt.Errorf("fuse: %s is already a FUSE mount (%s from %s)", dir, m.fstype, m.source)
	}
	return dir, nil
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	dir, fstype, source string
	dev                 string // major:minor
}

// findMount returns the mount whose mount point is dir, the last one if
// several are stacked, or nil.
func findMount(dir string) (*mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found *mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := parseMountinfo(sc.Text()); m != nil && m.dir == dir {
			found = m
		}
	}
	return found, sc.Err()
}

// parseMountinfo parses a mountinfo line:
// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
func parseMountinfo(line string) *mountEntry {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return nil
	}
	a, b := strings.Fields(pre), strings.Fields(post)
	if len(a) < 5 || len(b) < 2 {
		return nil
	}
	return &mountEntry{dir: unescapeOctal(a[4]), dev: a[2], fstype: b[0], source: unescapeOctal(b[1])}
}

// unescapeOctal undoes mountinfo's \ooo escapes (spaces, tabs, newlines).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tuneReadahead sets the mount's backing-device readahead: the kernel
// caps FUSE readahead at the device's read_ahead_kb (128 KiB by default)
// whatever the mount negotiated. Needs root; otherwise it logs and goes on.
func (s *Server) tuneReadahead(bytes int) {
	m, err := findMount(s.dir)
	if err != nil || m == nil {
		return
	}
	path := "/sys/class/bdi/" + m.dev + "/read_ahead_kb"
	if err := os.WriteFile(path, []byte(strconv.Itoa(max(bytes>>10, 4))), 0); err != nil {
		s.log.Debug("cannot set readahead", "path", path, "err", err)
	}
}
