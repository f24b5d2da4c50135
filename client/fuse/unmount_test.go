package fuse

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

// cleanupMount unmounts s if a failed test left it mounted.
func cleanupMount(s *Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.Unmount(ctx, true)
}

// mounted reports whether dir is a mount point, from /proc/self/mountinfo.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	m, err := findMount(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m != nil
}

// TestUnmountBusy: an unmount while a process holds the mount (an open
// file, a working directory) fails with ErrBusy and the mount keeps
// working; once the holder is gone it succeeds and nothing stays mounted.
func TestUnmountBusy(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 2)
	dir := t.TempDir()
	s, err := Mount(context.Background(), cl.Client(), dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupMount(s) })
	p := filepath.Join(dir, "held")
	if err := os.WriteFile(p, []byte("still here"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}

	// An open file in this process.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unmount(short(), false); !errors.Is(err, ErrBusy) {
		t.Fatalf("unmount with an open file: %v, want ErrBusy", err)
	}
	if err := Unmount(dir, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("Unmount(dir) with an open file: %v, want ErrBusy", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "still here" {
		t.Fatalf("mount after the refused unmount: %q, %v", got, err)
	}
	f.Close()

	// A process whose working directory is in the mount (entered by the
	// shell: the test process serves the mount, so it must not chdir
	// there itself while forking).
	sub := filepath.Join(dir, "cwd")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sh", "-c", `cd "$1" && echo in && exec sleep 60`, "sh", sub)
	holder.Dir = os.TempDir()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	buf := make([]byte, 3)
	if _, err := out.Read(buf); err != nil {
		t.Fatalf("holder: %v", err)
	}
	err = Unmount(dir, false)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("unmount with a working directory inside: %v, want ErrBusy", err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "still here" {
		t.Fatalf("mount after the refused unmount: %q, %v", got, err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Unmount(ctx, false); err != nil {
		t.Fatalf("unmount after the holders left: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Unmount returned before serving ended")
	}
	if mounted(t, dir) {
		t.Errorf("%s is still mounted", dir)
	}
	if err := Unmount(dir, false); !errors.Is(err, ErrNotMounted) {
		t.Errorf("second unmount: %v, want ErrNotMounted", err)
	}
}

// TestUnmountLazy: a busy mount detached lazily is gone from the
// namespace at once and still serves its holder until it lets go.
func TestUnmountLazy(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 2)
	dir := t.TempDir()
	s, err := Mount(context.Background(), cl.Client(), dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupMount(s) })
	f, err := os.Create(filepath.Join(dir, "open"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Unmount(ctx, true); !errors.Is(err, ErrDetached) {
		t.Fatalf("lazy unmount: %v, want ErrDetached", err)
	}
	if mounted(t, dir) {
		t.Errorf("%s is still in the mount table after a lazy unmount", dir)
	}
	if _, err := f.WriteString("written after detach"); err != nil {
		t.Fatalf("write through the detached mount: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("still serving after the last holder closed")
	}
	got, err := cl.Client().Stat(context.Background(), "/open")
	if err != nil || got.Size != uint64(len("written after detach")) {
		t.Errorf("file after detach: %+v, %v", got, err)
	}
}

// TestMountErrors: a bad mount point or a dead MDS fails before anything
// is mounted.
func TestMountErrors(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 1)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := mountCluster(t, cl, DefaultOptions())
	tests := []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "does not exist"},
		{"not a directory", file, "is not a directory"},
		{"already mounted", s.Dir(), "already a FUSE mount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Mount(context.Background(), cl.Client(), tc.dir, DefaultOptions())
			if err == nil || !containsStr(err.Error(), tc.want) {
				t.Fatalf("mount %s: %v, want %q", tc.dir, err, tc.want)
			}
		})
	}
	t.Run("dead MDS", func(t *testing.T) {
		c := deadClient(t)
		opts := DefaultOptions()
		opts.ProbeTimeout = time.Second
		_, err := Mount(context.Background(), c, dir, opts)
		if err == nil || !containsStr(err.Error(), "MDS does not answer") {
			t.Fatalf("mount: %v", err)
		}
		if mounted(t, dir) {
			t.Errorf("%s is mounted after a failed mount", dir)
		}
	})
}

// holdInNamespace starts a process in a new mount namespace, made after
// the mount, so that it holds a copy of the mount (as a Slurm job's
// container or any `unshare -m` does). It is killed at the end of the test.
func holdInNamespace(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", "cd "+dir+" && echo ok && exec sleep 300")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 3)
	if _, err := out.Read(buf); err != nil || string(buf[:2]) != "ok" {
		t.Fatalf("the holder did not start in the mount: %q %v", buf, err)
	}
}

// TestUnmountHeldByAnotherNamespace: a mount that another mount namespace
// still holds (a copy made after the mount) stops serving within seconds
// of `fusermount3 -u` here, and of Unmount, instead of serving forever.
func TestUnmountHeldByAnotherNamespace(t *testing.T) {
	requireFUSE(t)
	cl := testcluster.Start(t, 1)
	for _, how := range []string{"fusermount3 -u", "Unmount"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Mount(context.Background(), cl.Client(), dir, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cleanupMount(s) })
			if err := os.WriteFile(filepath.Join(dir, how), []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			holdInNamespace(t, dir)
			if how == "Unmount" {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if err := s.Unmount(ctx, true); err != nil {
					t.Fatalf("Unmount: %v", err)
				}
			} else if out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput(); err != nil {
				t.Fatalf("fusermount3 -u: %v: %s", err, out)
			}
			select {
			case <-s.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("still serving 30 s after the unmount: another namespace's copy keeps it alive")
			}
			if mounted(t, dir) {
				t.Errorf("%s is still mounted here", dir)
			}
			got, err := cl.Client().Stat(context.Background(), "/"+how)
			if err != nil || got.Size != 4 {
				t.Errorf("file written before the unmount: %+v, %v", got, err)
			}
		})
	}
}
