package fuse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// fusectlDir is where the kernel's fusectl file system lists FUSE
// connections, each with an abort file.
const fusectlDir = "/sys/fs/fuse/connections"

// fusectlMagic is the fusectl file system's statfs type.
const fusectlMagic = 0x65735543

// kconn is a mount's kernel connection as fusectl lists it. Its number is
// the minor of the mount's anonymous device, which the kernel hands to the
// next mount (of any file system, in any test or job) as soon as this one
// has ended, lowest free first: after the end, fusectl may list another
// mount's connection under the same number. ctl, the identity of the
// connection's abort file when it was mounted, tells the two apart.
type kconn struct {
	num uint32 // fusectl directory name, 0 if unknown
	dev string // the mount's "major:minor" as mountinfo shows it
	ctl fileID // its fusectl abort file then, zero if unknown
}

// fileID identifies a file: its file system's device and its inode.
type fileID struct{ dev, ino uint64 }

// connOf returns the kernel connection of the FUSE file system mounted on
// dir. It needs fusectl, which it mounts if no one has (as fuse's init
// scripts do; root only): without it the connection cannot be told from
// the next one under its number. On error the returned kconn has what was
// learnt.
func connOf(dir string) (kconn, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return kconn{}, fmt.Errorf("stat %s: %w", dir, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	c := kconn{dev: fmt.Sprintf("%d:%d", major, minor)}
	if major != 0 {
		return c, fmt.Errorf("%s: device %s is not an anonymous FUSE device", dir, c.dev)
	}
	c.num = minor
	if !fusectlMounted() {
		if err := unix.Mount("fusectl", fusectlDir, "fusectl", 0, ""); err != nil {
			return c, fmt.Errorf("mount fusectl on %s: %w", fusectlDir, err)
		}
	}
	id, err := statID(c.abortPath())
	if err != nil {
		return c, fmt.Errorf("connection %d in fusectl: %w", c.num, err)
	}
	c.ctl = id
	return c, nil
}

// abortPath is the connection's fusectl abort file.
func (c kconn) abortPath() string {
	return filepath.Join(fusectlDir, strconv.FormatUint(uint64(c.num), 10), "abort")
}

// known reports whether the connection can be told from another under its
// number.
func (c kconn) known() bool { return c.num != 0 && c.ctl != (fileID{}) }

// gone reports whether the connection has ended: fusectl lists a
// connection until the last copy of its mount (in any namespace) is gone,
// so it ended if fusectl lists its number no more, or lists another
// connection under it. known is false where nobody can tell (fusectl not
// mounted, or mounted anew since: every connection's file is new then).
// Call it only once the mount is gone from this namespace: a fusectl
// mounted anew on the same device could pass for a reused number.
func (c kconn) gone() (gone, known bool) {
	if !c.known() || !fusectlMounted() {
		return false, false
	}
	id, err := statID(c.abortPath())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, true
	case err != nil:
		return false, false
	case id == c.ctl:
		return false, true
	case id.dev != c.ctl.dev:
		return false, false
	}
	return true, true
}

// abort ends the connection through its fusectl abort file, unless the
// file is no longer the connection's (it ended: its number may be another
// mount's now, which must not be touched). ended reports that it had
// ended already.
func (c kconn) abort() (ended bool, err error) {
	if !c.known() {
		return false, ErrNoConn
	}
	if !fusectlMounted() {
		return false, fmt.Errorf("fusectl is no longer mounted on %s: %w", fusectlDir, ErrNoConn)
	}
	f, err := os.OpenFile(c.abortPath(), os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	// The open file stays the one checked here: once its connection
	// ends, writing it does nothing, whatever the number names by then.
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	switch id := (fileID{dev: st.Dev, ino: st.Ino}); {
	case id.dev != c.ctl.dev:
		return false, fmt.Errorf("fusectl was mounted anew: %s may be another mount's: %w", f.Name(), ErrNoConn)
	case id != c.ctl:
		return true, nil
	}
	if _, err := f.Write([]byte("1")); err != nil {
		return false, err
	}
	return false, nil
}

// fusectlMounted reports whether fusectl is mounted on fusectlDir.
func fusectlMounted() bool {
	var st unix.Statfs_t
	return unix.Statfs(fusectlDir, &st) == nil && st.Type == fusectlMagic
}

// statID returns the identity of the file at path.
func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}
