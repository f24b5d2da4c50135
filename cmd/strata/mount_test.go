package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// requireFUSE skips a mount test, loudly, where there is no /dev/fuse.
func requireFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("SKIPPING MOUNT TEST: /dev/fuse is missing (%v): 'strata mount' WAS NOT TESTED HERE", err)
	}
}

// isMounted reports whether dir is a mount point (/proc/self/mountinfo).
func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == dir {
			return true
		}
	}
	return false
}

// startMount runs `strata mount` on a fresh directory and waits until it
// is mounted.
func startMount(t *testing.T, env map[string]string, extra ...string) (*daemon, string) {
	t.Helper()
	dir := t.TempDir()
	d := startDaemon(t, env, append(append([]string{"mount"}, extra...), dir)...)
	waitFor(t, "the mount", d, func() bool { return isMounted(t, dir) })
	return d, dir
}

// exited waits for a daemon command to return by itself.
func (d *daemon) exited(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d.done:
		d.cancel()
		d.cancel = nil
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("still running; stderr:\n%s", d.err.String())
	}
	return nil
}

// TestMountCommand: strata mount serves the namespace until strata
// umount; a busy umount fails with "target is busy" and leaves the mount
// working; the next umount succeeds and strata mount exits 0, silently.
func TestMountCommand(t *testing.T) {
	requireFUSE(t)
	c := newCLI(t, 2)
	d, dir := startMount(t, c.env(), "--attr-timeout", "500ms", "-o", "entry_timeout=0.5,noatime")
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("hello, strata\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := c.ok("cat", "/hello"); out != "hello, strata\n" {
		t.Fatalf("strata cat of a file written through the mount: %q", out)
	}
	c.ok("mkdir", "/run")
	if _, err := os.Stat(filepath.Join(dir, "run")); err != nil {
		t.Fatalf("directory made by the CLI, through the mount: %v", err)
	}

	// A process with its working directory in the mount.
	holder := exec.Command("sh", "-c", `cd "$1" && echo in && exec sleep 60`, "sh", filepath.Join(dir, "run"))
	holder.Dir = os.TempDir()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if _, err := out.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	strata(t, nil, "umount", dir).fails(t, 1, "target is busy")
	if got, err := os.ReadFile(filepath.Join(dir, "hello")); err != nil || string(got) != "hello, strata\n" {
		t.Fatalf("mount after a refused umount: %q, %v", got, err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()

	strata(t, nil, "umount", dir).ok(t)
	if err := d.exited(t); err != nil {
		t.Fatalf("strata mount after umount: %v", err)
	}
	if isMounted(t, dir) {
		t.Errorf("%s still mounted", dir)
	}
	if s := d.out.String() + d.err.String(); s != "" {
		t.Errorf("strata mount printed %q", s)
	}
	strata(t, nil, "umount", dir).fails(t, 1, "not a FUSE mount point")
}

// TestMountSignal: SIGTERM (the context ending) unmounts cleanly.
func TestMountSignal(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 1)
	d, dir := startMount(t, envOf(cl))
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	if isMounted(t, dir) {
		t.Errorf("%s still mounted after SIGTERM", dir)
	}
	if s := d.err.String(); s != "" {
		t.Errorf("strata mount printed %q", s)
	}
}

// TestMountBadInput: a bad mount point or an unreachable MDS fails with
// one line and leaves nothing mounted.
func TestMountBadInput(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := envOf(cl)
	strata(t, env, "mount", filepath.Join(dir, "nope")).fails(t, 1, "no such directory")
	strata(t, env, "mount", file).fails(t, 1, "not a directory")
	strata(t, env, "mount", "--mds", "127.0.0.1:1", dir).fails(t, 1, "cannot reach the MDS at 127.0.0.1:1")
	strata(t, nil, "mount", "-o", "max_write=lots", dir).fails(t, 2, "max_write")
	strata(t, nil, "mount").fails(t, 2, "missing arguments")
	strata(t, nil, "umount").fails(t, 2, "missing arguments")
	if isMounted(t, dir) {
		t.Errorf("%s mounted after failed mounts", dir)
	}
}

// TestMountOptions: the -o options the mount knows set its options and
// are not handed to the kernel (which refuses what it does not know);
// the others are.
func TestMountOptions(t *testing.T) {
	opts := fuse.DefaultOptions()
	if err := applyMountOptions(&opts, []string{"direct_io", "max_readahead=4M", "noatime"}); err != nil {
		t.Fatal(err)
	}
	if !opts.DirectIO || opts.MaxReadahead != 4<<20 {
		t.Errorf("direct_io,max_readahead=4M: DirectIO %v, MaxReadahead %d", opts.DirectIO, opts.MaxReadahead)
	}
	if len(opts.Extra) != 1 || opts.Extra[0] != "noatime" {
		t.Errorf("options for the kernel %q, want [noatime]", opts.Extra)
	}
	if fuse.DefaultOptions().DirectIO {
		t.Errorf("direct_io is on by default")
	}
	for _, c := range []struct {
		opt  string
		want int64
	}{{"stream_min=off", -1}, {"stream_min=1G", 1 << 30}} {
		opts := fuse.DefaultOptions()
		if err := applyMountOptions(&opts, []string{c.opt}); err != nil || opts.StreamMin != c.want {
			t.Errorf("%s: StreamMin %d (%v), want %d", c.opt, opts.StreamMin, err, c.want)
		}
	}
	for _, bad := range []string{"stream_min=0", "stream_min=lots"} {
		opts := fuse.DefaultOptions()
		if err := applyMountOptions(&opts, []string{bad}); err == nil {
			t.Errorf("%s accepted (StreamMin %d), want an error", bad, opts.StreamMin)
		}
	}
}
