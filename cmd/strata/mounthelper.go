package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// mountHelperName is the name mount(8) runs for file systems of type
// fuse.strata (/sbin/mount.fuse.strata, a link to the strata binary made by
// the Debian package); mount.strata is accepted too, for type strata.
const mountHelperName = "mount.fuse.strata"

// readyFDEnv names the file descriptor on which a `strata mount` started
// by the mount helper reports "ok" once mounted, or the error that stopped
// it.
const readyFDEnv = "STRATA_MOUNT_READY_FD"

// isMountHelper reports whether prog, a program's argv[0], is the mount
// helper's name.
func isMountHelper(prog string) bool {
	b := filepath.Base(prog)
	return b == mountHelperName || b == "mount.strata"
}

// userspaceMountOptions are fstab options for mount(8) and systemd, or
// the defaults that "defaults" stands for: the helper drops them.
var userspaceMountOptions = map[string]bool{
	"defaults": true, "auto": true, "noauto": true, "_netdev": true, "nofail": true,
	"user": true, "nouser": true, "users": true, "owner": true, "group": true,
	"rw": true, "suid": true, "dev": true, "exec": true, "async": true,
}

// runMountHelper is mount(8)'s helper for type fuse.strata:
//
//	mount.fuse.strata strata:MDS1:7000,MDS2:7000 DIR [-sfnv] [-o OPTIONS]
//
// It checks the mount point, starts `strata mount` in a session of its own
// and returns once the file system is mounted, or with the error that
// stopped it. The `strata mount` process serves the mount until it is
// unmounted (umount DIR).
func runMountHelper(_ context.Context, a *app, args []string) error {
	var pos, opts []string
	fake, verbose := false, false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-o" || arg == "-t" || arg == "-N":
			if i+1 == len(args) {
				return usageErrorf(mountHelperName, "%s needs a value", arg)
			}
			i++
			if arg == "-o" {
				opts = append(opts, strings.Split(args[i], ",")...)
			}
		case strings.HasPrefix(arg, "-o") && len(arg) > 2:
			opts = append(opts, strings.Split(arg[2:], ",")...)
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			for _, c := range arg[1:] {
				switch c {
				case 'f':
					fake = true
				case 'v':
					verbose = true
				case 's', 'n':
				default:
					return usageErrorf(mountHelperName, "unknown flag -%c", c)
				}
			}
		default:
			pos = append(pos, arg)
		}
	}
	if len(pos) != 2 {
		return usageErrorf(mountHelperName, "want strata:MDS[,MDS...] MOUNTPOINT, got %d arguments", len(pos))
	}
	spec, dir := pos[0], pos[1]
	mds := strings.TrimPrefix(spec, "strata:")
	if mds == "" || strings.HasPrefix(mds, ",") || strings.HasSuffix(mds, ",") || strings.Contains(mds, ",,") {
		return usageErrorf(mountHelperName, "source %q: want strata:MDS[:PORT][,MDS[:PORT]...]", spec)
	}
	cmdArgs := []string{"mount", "--mds", mds, "--fsname", spec}
	var kept []string
	for _, o := range opts {
		if o == "" || userspaceMountOptions[o] || strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "comment=") {
			continue
		}
		kept = append(kept, o)
	}
	if len(kept) > 0 {
		cmdArgs = append(cmdArgs, "-o", strings.Join(kept, ","))
	}
	cmdArgs = append(cmdArgs, dir)
	if verbose {
		fmt.Fprintf(a.stdout, "%s: strata %s\n", mountHelperName, strings.Join(cmdArgs, " "))
	}
	if err := checkMountDir(dir); err != nil || fake {
		return err
	}
	return spawnMount(a, cmdArgs)
}

// spawnMount runs `strata cmdArgs...` (a mount) in a session of its own
// and waits until it reports on the ready pipe: "ok" once mounted, else
// the error. Its log goes to the journal when the helper's stderr is
// journald's (a mount unit), else nowhere, as FUSE file systems do once
// they are daemons; `strata mount` in the foreground shows it.
func spawnMount(a *app, cmdArgs []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the strata binary: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, cmdArgs...)
	cmd.Env = append(os.Environ(), readyFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if stderrIsJournal(a.getenv("JOURNAL_STREAM")) {
		cmd.Stderr = os.Stderr
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("start strata mount: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	if strings.TrimSpace(string(msg)) == "ok" {
		return cmd.Process.Release()
	}
	werr := cmd.Wait()
	if s := strings.TrimSpace(string(msg)); s != "" {
		return errors.New(s)
	}
	return fmt.Errorf("strata mount exited before mounting: %v", werr)
}

// stderrIsJournal reports whether this process's stderr is the journal
// stream systemd named in $JOURNAL_STREAM ("DEVICE:INODE").
func stderrIsJournal(stream string) bool {
	dev, ino, ok := strings.Cut(stream, ":")
	if !ok {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(2, &st); err != nil {
		return false
	}
	return strconv.FormatUint(st.Dev, 10) == dev && strconv.FormatUint(st.Ino, 10) == ino
}

// mountReady returns the ready pipe of a `strata mount` started by the
// helper ($STRATA_MOUNT_READY_FD), or nil.
func mountReady(a *app) *os.File {
	fd, err := strconv.Atoi(a.env(readyFDEnv))
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "mount-ready")
}
