package mungetest

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Start runs munged with a fresh key and returns its socket; it is
// stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("munged")
	if err != nil {
		for _, p := range []string{"/usr/sbin/munged", "/sbin/munged"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		t.Fatal("munged not found: run contrib/test-deps.sh (package munge)")
	}
	// Short, world-searchable: munged insists on both.
	dir, err := os.MkdirTemp("/tmp", "mt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock, pid := filepath.Join(dir, "sock"), filepath.Join(dir, "pid")
	cmd := exec.Command(bin, "--socket="+sock, "--key-file="+filepath.Join(dir, "key"),
		"--log-file="+filepath.Join(dir, "log"), "--pid-file="+pid, "--seed-file="+filepath.Join(dir, "seed"), "--force")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("munged: %v: %s", err, out)
	}
	// munged daemonizes: stop it by the PID it writes.
	t.Cleanup(func() {
		b, _ := os.ReadFile(pid)
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			_ = syscall.Kill(n, syscall.SIGTERM)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, perr := os.Stat(pid)
		if _, err := os.Stat(sock); err == nil && perr == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("munged did not start in 10s: %s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sock
}
