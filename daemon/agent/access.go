package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Stage-in and drains act for the job's user, never as root:
//
//   - On the node's file system (a /PATH source or destination) every open,
//     mkdir, create and rename runs on an OS thread of its own whose file
//     system identity (setfsuid, setfsgid, supplementary groups; all
//     per-thread in Linux) is the user's; the kernel checks permissions.
//     The thread is thrown away afterwards, never returned to Go's pool.
//   - The global namespace's MDS does not check permissions yet (the
//     namespace issue leaves it to the kernel of each mount). So the agent
//     checks them itself against the mode, uid and gid the MDS keeps, as
//     the kernel would with default_permissions: search on every
//     directory of the path, read to stage in, write and search on the
//     directory a drain creates files in. What the agent creates there is
//     owned by the user (the client's credentials). A client that talks to
//     the MDS directly is not bound by this: that gap is the MDS's to
//     close (docs/agent.md).

// identity is the job's user as permission checks see it.
type identity struct {
	uid, gid uint32
	groups   []uint32 // supplementary groups, the primary one included
}

// lookupIdentity returns uid's identity with its supplementary groups from
// the user database; a uid it does not know gets gid alone.
func lookupIdentity(uid, gid uint32) identity {
	id := identity{uid: uid, gid: gid, groups: []uint32{gid}}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return id
	}
	gs, err := u.GroupIds()
	if err != nil {
		return id
	}
	for _, g := range gs {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil && !slices.Contains(id.groups, uint32(n)) {
			id.groups = append(id.groups, uint32(n))
		}
	}
	return id
}

// Permission bits asked of an inode.
const (
	permRead  = 4
	permWrite = 2
	permExec  = 1
)

// may reports whether id may access an inode with attributes a as want
// (permRead|permWrite|permExec) asks, by the POSIX rules: owner, else
// group, else other bits; root may do anything but execute a file no one
// may execute.
func (id identity) may(a *rpc.Attr, want uint32) bool {
	if id.uid == 0 {
		return want&permExec == 0 || a.IsDir() || a.Mode&0o111 != 0
	}
	bits := a.Mode & 7
	switch {
	case a.Uid == id.uid:
		bits = a.Mode >> 6 & 7
	case slices.Contains(id.groups, a.Gid):
		bits = a.Mode >> 3 & 7
	}
	return bits&want == want
}

// errPerm is the user-facing refusal of a global path: a *fs.PathError,
// so that a message can name the path refused (stageErr).
func errPerm(p string) error {
	return &fs.PathError{Op: "access", Path: p, Err: syscall.EACCES}
}

// checkGlobal walks the global path p (absolute, clean) as id: every
// directory on the way must be searchable; p itself must allow want. It
// returns p's attributes.
func checkGlobal(ctx context.Context, c *client.Client, id identity, p string, want uint32) (*rpc.Attr, error) {
	a, err := c.Getattr(ctx, rpc.RootIno)
	if err != nil {
		return nil, err
	}
	cur := "/"
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if name == "" {
			continue
		}
		if !a.IsDir() {
			return nil, fmt.Errorf("%s: %w", cur, syscall.ENOTDIR)
		}
		if !id.may(a, permExec) {
			return nil, errPerm(cur)
		}
		cur = path.Join(cur, name)
		if a, err = c.Stat(ctx, cur); err != nil {
			return nil, err
		}
	}
	if !id.may(a, want) {
		return nil, errPerm(p)
	}
	return a, nil
}

// mkdirGlobal makes the global directory p and its missing parents as id
// (c creates as the user), checking write and search permission on each
// parent it creates in.
func mkdirGlobal(ctx context.Context, c *client.Client, id identity, p string) error {
	a, err := c.Stat(ctx, p)
	if err == nil {
		if !a.IsDir() {
			return fmt.Errorf("%s: %w", p, syscall.ENOTDIR)
		}
		return nil
	}
	if !errors.Is(err, syscall.ENOENT) || p == "/" {
		return err
	}
	parent := path.Dir(p)
	if err := mkdirGlobal(ctx, c, id, parent); err != nil {
		return err
	}
	if _, err := checkGlobal(ctx, c, id, parent, permWrite|permExec); err != nil {
		return err
	}
	if err := c.Mkdir(ctx, p, 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
		return err
	}
	return nil
}

// asUser runs fn on an OS thread whose file system identity is id's, and
// returns its error. The thread is discarded when fn returns. fn must not
// start goroutines that touch the file system for the user.
func asUser(id identity, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the goroutine's exit ends the thread, so
		// the changed credentials never serve another goroutine.
		if err := setThreadIdentity(id); err != nil {
			done <- err
			return
		}
		done <- fn()
	}()
	return <-done
}

// setThreadIdentity sets the calling thread's supplementary groups, fsgid
// and fsuid. The raw setgroups system call changes this thread only (Go's
// syscall.Setgroups would change every thread of the process).
func setThreadIdentity(id identity) error {
	groups := make([]uint32, len(id.groups))
	copy(groups, id.groups)
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	runtime.KeepAlive(groups)
	unix.Setfsgid(int(id.gid))
	unix.Setfsuid(int(id.uid))
	if prev, _ := unix.SetfsuidRetUid(-1); prev != int(id.uid) {
		return fmt.Errorf("setfsuid %d did not take", id.uid)
	}
	return nil
}
