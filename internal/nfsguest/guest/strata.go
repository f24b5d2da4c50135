package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// strataMnt is where strataIO mounts Strata with FUSE.
const strataMnt = "/mnt-strata"

// strataIO mounts Strata in the guest with /bin/strata (the static strata
// command, FUSE through the guest kernel's fuse module and fusermount3),
// talking to the MDS at mds with the cluster secret secretHex, and times
// the same I/O as the NFS mount's as "BENCH strata_...". Both clients run
// in the same emulated machine, so their ratio leaves out what emulation
// costs both.
func strataIO(n int, mds, secretHex string) {
	secret, err := hex.DecodeString(secretHex)
	if err == nil {
		err = os.WriteFile("/tmp/strata-secret", secret, 0o600)
	}
	if err == nil {
		err = os.MkdirAll(strataMnt, 0o755)
	}
	step("strata-setup", err)
	if err != nil {
		return
	}
	cmd := exec.Command("/bin/strata", "mount", "--mds", mds, strataMnt)
	cmd.Env = append(os.Environ(), "STRATA_SECRET_FILE=/tmp/strata-secret", "HOME=/tmp")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		step("strata-mount", err)
		return
	}
	exited := make(chan struct{}) // closed once strata mount ended
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	err = waitMounted(strataMnt, exited, 5*time.Minute)
	step("strata-mount", err)
	if err == nil {
		timedIO(filepath.Join(strataMnt, "big-strata.bin"), n, "strata_")
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		step("strata-umount", fmt.Errorf("strata mount still ran 2 minutes after SIGTERM"))
	}
}

// waitMounted waits up to d until a FUSE file system is mounted on dir, or
// the mounting process ends (exited is closed; it printed why).
func waitMounted(dir string, exited <-chan struct{}, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if b, err := os.ReadFile("/proc/mounts"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) > 2 && f[1] == dir && strings.HasPrefix(f[2], "fuse") {
					return nil
				}
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("strata mount ended before %s was mounted", dir)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not mounted within %v", dir, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
