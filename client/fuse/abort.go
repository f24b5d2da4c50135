package fuse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// fusectlDir is where the kernel's fusectl file system lists FUSE
// connections, each with an abort file.
const fusectlDir = "/sys/fs/fuse/connections"

// abortWait bounds how long Abort waits for serving to end once the kernel
// has ended the connection.
const abortWait = 5 * time.Second

// connID returns the FUSE connection number of the file system mounted on
// dir (the name of its fusectl directory: the kernel's encoding of its
// anonymous device, major 0) and its "major:minor" as mountinfo shows it.
func connID(dir string) (uint32, string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, "", fmt.Errorf("stat %s: %w", dir, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	dev := fmt.Sprintf("%d:%d", major, minor)
	if major != 0 {
		return 0, dev, fmt.Errorf("%s: device %s is not an anonymous FUSE device", dir, dev)
	}
	return minor, dev, nil
}

// Abort ends the mount's kernel connection (fusectl's abort, as
// `echo 1 > /sys/fs/fuse/connections/N/abort` does) and waits for serving
// to end. It is the last resort of an unmount: a copy of the mount that
// another mount namespace still holds (a Slurm job's, an `unshare -m`
// started after the mount) or a process of a detached mount that never lets
// go would otherwise keep this Server serving forever. Their next calls on
// the mount fail with ENOTCONN; nothing this Server received is lost (it
// is written back as at any unmount). It needs root (fusectl is root's).
func (s *Server) Abort() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if s.conn == 0 {
		return fmt.Errorf("abort the FUSE connection of %s: %w", s.dir, ErrNoConn)
	}
	p := filepath.Join(fusectlDir, strconv.FormatUint(uint64(s.conn), 10), "abort")
	if _, err := os.Stat(fusectlDir + "/."); err == nil {
		if _, err := os.Stat(filepath.Dir(p)); errors.Is(err, os.ErrNotExist) {
			// fusectl is not mounted (or this is another connection
			// list): mount it, as fuse's init scripts do.
			if err := unix.Mount("fusectl", fusectlDir, "fusectl", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("abort the FUSE connection of %s: mount fusectl on %s: %w", s.dir, fusectlDir, err)
			}
		}
	}
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		select {
		case <-s.done: // ended meanwhile: its fusectl directory went with it
			return nil
		default:
		}
		// Ended by the kernel already, still serving what was in flight.
		if ended, _ := connEnded(s.conn); !ended {
			return fmt.Errorf("abort the FUSE connection of %s: %w", s.dir, err)
		}
	}
	s.letGo.ended()
	wait := abortWait + s.letGo.timeout
	select {
	case <-s.done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("abort the FUSE connection of %s: still serving %v after the abort", s.dir, wait)
	}
}

// watch ends serving when the mount has left this mount namespace (an
// unmount by anyone: strata umount, fusermount3 -u, umount) but the
// connection lives on for longer than grace, because a copy of the mount in
// another mount namespace holds it. A mount this Server detached itself
// (a lazy unmount of a busy mount) is left to its holders.
func (s *Server) watch(grace time.Duration) {
	defer s.wg.Done()
	tick := time.NewTicker(grace / 3)
	defer tick.Stop()
	var gone time.Time
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if ended, _ := connEnded(s.conn); ended {
			// Unmounted (the last copy of the mount is gone) while
			// requests are still in flight: give them UnmountTimeout.
			s.letGo.ended()
			return
		}
		if s.detached.Load() {
			gone = time.Time{}
			continue
		}
		m, err := findMount(s.dir)
		if err != nil || (m != nil && m.dev == s.dev) {
			gone = time.Time{}
			continue
		}
		if gone.IsZero() {
			gone = time.Now()
			continue
		}
		if time.Since(gone) < grace {
			continue
		}
		if err := s.Abort(); err != nil {
			s.log.Warn("unmounted, but another mount namespace still holds the mount and its connection could not be ended", "err", err)
			return
		}
		s.log.Warn("unmounted, but another mount namespace still held the mount: ended its FUSE connection; processes there get ENOTCONN")
		return
	}
}
