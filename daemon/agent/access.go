package agent

import (
	"fmt"
	"os/user"
	"runtime"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stage-in and drains act for the job's user, never as root:
//
//   - On the node's file system (a /PATH source or destination) every open,
//     mkdir, create and rename runs on an OS thread of its own whose file
//     system identity (setfsuid, setfsgid, supplementary groups; all
//     per-thread in Linux) is the user's; the kernel checks permissions.
//     The thread is thrown away afterwards, never returned to Go's pool.
//   - Toward the global namespace every call of the stage-in and drain
//     client carries the agent's node credential acting for the user
//     (identity.ActingFor), so the MDS checks each lookup, readdir, open,
//     create and rename as it would the user's own (docs/security.md);
//     the agent checks nothing itself, so no race between a check and
//     the use and no rule of its own can let a job read or replace what
//     its user may not. What it creates there is the user's.

// identity is the job's user as the node's kernel sees it (asUser).
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
