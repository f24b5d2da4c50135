package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The tier's daemons are processes of the strata binary, each in a
// process group of its own so that neither a signal to the agent nor its
// exit reaches them: `systemctl restart strata-agent` (KillMode=process)
// leaves running tiers alone, and the restarted agent adopts them by PID.

// startProc starts `strata ARGS...` with its output appended to logFile
// and returns it. Nothing waits for it: stopProc reaps it once it is gone
// (an exited daemon is a zombie until then, which alive counts as dead),
// and after an agent restart init reaps the daemons the old agent started.
// So the agent's Close never waits for a tier.
func (s *Server) startProc(logFile string, args ...string) (procInfo, error) {
	lf, err := os.OpenFile(logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return procInfo{}, fmt.Errorf("log file: %w", err)
	}
	defer lf.Close()
	cmd := exec.Command(s.cfg.Strata, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// A clean environment: the daemons read STRATA_* keys from it.
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return procInfo{}, fmt.Errorf("start strata %s: %w", args[0], err)
	}
	p := procInfo{PID: cmd.Process.Pid, Log: logFile}
	p.Start, _ = procStart(p.PID)
	_ = cmd.Process.Release()
	return p, nil
}

// procStat is what the agent reads of a process in /proc/PID/stat.
type procStat struct {
	ppid   int
	start  uint64 // clock ticks since boot
	zombie bool   // exited, not yet reaped
}

// readProcStat reads /proc/PID/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces: fields start after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	ppid, _ := strconv.Atoi(f[1])
	start, err := strconv.ParseUint(f[19], 10, 64)
	return procStat{ppid: ppid, start: start, zombie: f[0] == "Z" || f[0] == "X"}, err
}

// procStart returns the start time of pid in clock ticks since boot.
func procStart(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	if st.zombie {
		return 0, errors.New("process is a zombie")
	}
	return st.start, nil
}

// alive reports whether p still runs: the same PID with the same start
// time, not a zombie, and either a child of this agent (which started it
// in this boot; its command line may not show the daemon's yet, between
// fork and exec or while a wrapper runs) or a process whose command line
// names marker (the job's own directory), so that a recycled PID, or one
// from before a reboot in a state file, is never taken for the tier's.
func alive(p procInfo, marker string) bool {
	if p.PID <= 0 {
		return false
	}
	st, err := readProcStat(p.PID)
	if err != nil || st.zombie || (p.Start != 0 && st.start != p.Start) {
		return false
	}
	if st.ppid == os.Getpid() && p.Start != 0 {
		return true
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
	return err == nil && bytes.Contains(cmdline, []byte(marker))
}

// exitReason says why a daemon of the tier that was seen dead exited:
// its exit status when it was this agent's child, and the last lines of
// its log. It reaps the child.
func exitReason(name string, p procInfo) string {
	status := ""
	var ws unix.WaitStatus
	if pid, err := unix.Wait4(p.PID, &ws, unix.WNOHANG, nil); err == nil && pid == p.PID {
		switch {
		case ws.Exited():
			status = fmt.Sprintf(" with status %d", ws.ExitStatus())
		case ws.Signaled():
			status = fmt.Sprintf(" (killed by %v)", ws.Signal())
		}
	}
	tail := tailLog(p.Log)
	if tail == "" {
		tail = "its log " + p.Log + " is empty"
	}
	return fmt.Sprintf("%s exited%s: %s", name, status, tail)
}

// stopProc stops p: SIGTERM to its process group, then SIGKILL after
// grace. It returns once the process is gone (or was not ours).
func stopProc(p procInfo, marker string, grace time.Duration) {
	if !alive(p, marker) {
		reap(p.PID)
		return
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	defer reap(p.PID)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(-p.PID, sig)
		_ = syscall.Kill(p.PID, sig)
		if waitExit(fd, grace) {
			return
		}
	}
	waitExit(fd, time.Minute)
}

// reap collects the exit status of pid if it is a child of this process
// (ECHILD otherwise).
func reap(pid int) {
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}

// waitExit waits up to d until the process of the pidfd fd has exited.
func waitExit(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return false
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// tailLog returns the last lines of a daemon's log, for an error message.
func tailLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// logPath is the log file of one of a tier's daemons.
func (t *tier) logPath(name string) string { return filepath.Join(t.jobDir, name+".log") }
