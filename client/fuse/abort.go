package fuse

import (
	"fmt"
	"time"
)

// abortWait bounds how long Abort waits for serving to end once the kernel
// has ended the connection.
const abortWait = 5 * time.Second

// Abort ends the mount's kernel connection (fusectl's abort, as
// `echo 1 > /sys/fs/fuse/connections/N/abort` does) and waits for serving
// to end. It is the last resort of an unmount: a copy of the mount that
// another mount namespace still holds (a Slurm job's, an `unshare -m`
// started after the mount) or a process of a detached mount that never lets
// go would otherwise keep this Server serving forever. Their next calls on
// the mount fail with ENOTCONN; nothing this Server received is lost (it
// is written back as at any unmount). It needs root (fusectl is root's).
// A connection that has ended already is left alone: its number may be
// another mount's by then (conn.go).
func (s *Server) Abort() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if !s.conn.known() {
		return fmt.Errorf("abort the FUSE connection of %s: %w", s.dir, ErrNoConn)
	}
	select {
	case <-s.served: // the connection has ended: nothing to abort
	default:
		if _, err := s.conn.abort(); err != nil {
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
// (a lazy unmount of a busy mount) is left to its holders. It stops once
// the connection has ended.
func (s *Server) watch(grace time.Duration) {
	defer s.wg.Done()
	tick := time.NewTicker(grace / 3)
	defer tick.Stop()
	var gone time.Time
	for {
		select {
		case <-s.served:
			return
		case <-tick.C:
		}
		if s.mountedHere() {
			gone = time.Time{}
			continue
		}
		if ended, _ := s.conn.gone(); ended {
			// Unmounted (the last copy of the mount is gone) while
			// requests are still in flight: give them UnmountTimeout.
			s.letGo.ended()
			return
		}
		if s.detached.Load() {
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

// mountedHere reports whether the mount is still on its directory in this
// mount namespace, or whether that cannot be told (mountinfo unreadable).
func (s *Server) mountedHere() bool {
	m, err := findMount(s.dir)
	return err != nil || (m != nil && m.dev == s.conn.dev)
}
