package debpkg

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/testcluster"
)

const (
	// lockFile serializes this test across the test processes of every
	// checkout on the machine: it installs one package.
	lockFile = "/run/lock/strata-debpkg-test.lock"
	// markerFile says that the strata package installed is this test's
	// (a run that died before its cleanup left it): the next run purges it.
	markerFile = "/var/lib/strata-debpkg-test"
	triplet    = "x86_64-linux-gnu"
)

// installed are the files docs/install.md lists, with their kind: "x" an
// executable, "l" a symbolic link to the strata binary, "f" a regular file.
var installed = map[string]string{
	"/usr/bin/strata":         "x",
	"/sbin/mount.fuse.strata": "l",
	"/usr/lib/" + triplet + "/slurm-wlm/spank_strata.so": "f",
	"/usr/lib/" + triplet + "/strata/libstrata_mpiio.so": "f",
	"/lib/systemd/system/strata-mds.service":             "f",
	"/lib/systemd/system/strata-ds@.service":             "f",
	"/lib/systemd/system/strata-agent.service":           "f",
	"/lib/systemd/system/strata-mount@.service":          "f",
	"/etc/strata/mds.toml":                               "f",
	"/etc/strata/ds.toml.example":                        "f",
	"/etc/strata/agent.conf":                             "f",
	"/etc/strata/mount.env":                              "f",
	"/etc/slurm/plugstack.conf.d/strata.conf":            "f",
	"/usr/share/doc/strata/install.md":                   "f",
	"/usr/share/doc/strata/examples/romio-hints":         "f",
	"/usr/share/doc/strata/examples/fstab":               "f",
	"/usr/share/man/man1/strata.1.gz":                    "f",
	"/usr/share/man/man1/strata-mount.1.gz":              "f",
	"/usr/share/man/man8/mount.fuse.strata.8.gz":         "f",
	"/usr/share/bash-completion/completions/strata":      "f",
}

// conffiles are the package's configuration files (dpkg conffiles).
var conffiles = []string{
	"/etc/strata/mds.toml", "/etc/strata/ds.toml.example", "/etc/strata/agent.conf",
	"/etc/strata/mount.env", "/etc/slurm/plugstack.conf.d/strata.conf",
}

const secretFile = "/etc/strata/secret"

func TestDebPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds, installs and removes a Debian package (minutes): not with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("installs a package with dpkg: run as root")
	}
	lock(t)
	top := repoRoot(t)
	deb := build(t, top)
	if !t.Run("lintian", func(t *testing.T) { lintian(t, deb) }) {
		return
	}
	prepareMachine(t)
	dataDir := keepDataDir(t)

	if !t.Run("install", func(t *testing.T) {
		if err := os.WriteFile(markerFile, []byte(deb+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dpkg(t, "-i", deb)
		checkInstalled(t)
	}) {
		return
	}
	t.Run("reinstall-keeps-configuration", func(t *testing.T) {
		before := readFile(t, secretFile)
		edited := append(readFile(t, "/etc/strata/mds.toml"), "log_level = \"debug\" # the admin's\n"...)
		if err := os.WriteFile("/etc/strata/mds.toml", edited, 0o644); err != nil {
			t.Fatal(err)
		}
		dpkg(t, "-i", deb)
		if !bytes.Equal(readFile(t, secretFile), before) {
			t.Error("reinstalling the package changed the cluster secret")
		}
		if !bytes.Equal(readFile(t, "/etc/strata/mds.toml"), edited) {
			t.Error("reinstalling the package lost the admin's change to /etc/strata/mds.toml")
		}
	})
	t.Run("version", func(t *testing.T) {
		out := run(t, "/usr/bin/strata", "version")
		for _, want := range []string{
			"mpi-io shim:  /usr/lib/" + triplet + "/strata/libstrata_mpiio.so, same version",
			"spank plugin: /usr/lib/" + triplet + "/slurm-wlm/spank_strata.so, same version",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("strata version lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("units", checkUnits)
	t.Run("fstab-generator", checkFstabGenerator)
	t.Run("completion", checkCompletion)
	t.Run("mount", checkMount)
	t.Run("remove", func(t *testing.T) {
		dpkg(t, "-r", "strata")
		if s := status(t); s != "rc" {
			t.Errorf("after dpkg -r, status %q, want rc (removed, configuration kept)", s)
		}
		for path := range installed {
			if strings.HasPrefix(path, "/etc/") {
				continue
			}
			if _, err := os.Lstat(path); err == nil {
				t.Errorf("%s is still there after dpkg -r", path)
			}
		}
		for _, f := range append(conffiles, secretFile) {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("dpkg -r removed configuration: %v", err)
			}
		}
		checkData(t, dataDir)
	})
	t.Run("purge", func(t *testing.T) {
		dpkg(t, "-P", "strata")
		if s := status(t); s != "" {
			t.Errorf("after dpkg -P, status %q, want not installed", s)
		}
		for _, f := range append(conffiles, secretFile) {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s is still there after dpkg -P", f)
			}
		}
		checkData(t, dataDir)
		_ = os.Remove(markerFile)
	})
}

// lock takes the machine-wide lock of this test, waiting for another
// checkout's run to finish.
func lock(t *testing.T) {
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

func repoRoot(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above the working directory")
		}
		d = filepath.Dir(d)
	}
}

// build runs `make deb` and returns the package's path.
func build(t *testing.T, top string) string {
	cmd := exec.Command("make", "-s", "-C", top, "deb")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	deb := filepath.Join(top, lines[len(lines)-1])
	if !strings.HasSuffix(deb, "_amd64.deb") {
		t.Fatalf("make deb did not name a package:\n%s", out)
	}
	if _, err := os.Stat(deb); err != nil {
		t.Fatal(err)
	}
	return deb
}

// lintian fails on any error lintian reports.
func lintian(t *testing.T, deb string) {
	out, err := exec.Command("lintian", "--fail-on", "error", deb).CombinedOutput()
	var errs []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "E: ") {
			errs = append(errs, l)
		}
	}
	if err != nil || len(errs) > 0 {
		t.Fatalf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
	}
	t.Logf("lintian:\n%s", out)
}

// prepareMachine makes sure no strata package is in the way, and that the
// machine is put back at the end: the package purged, and an older strata
// package that was installed before the test reinstalled (repacked with
// dpkg-repack) with its configuration as it was.
func prepareMachine(t *testing.T) {
	if _, err := os.Stat(markerFile); err == nil && status(t) != "" {
		t.Log("purging the strata package a previous run of this test left")
		dpkg(t, "-P", "strata")
	}
	var restore func(t *testing.T)
	if s := status(t); s != "" {
		restore = saveInstalled(t)
	}
	t.Cleanup(func() {
		if status(t) != "" {
			dpkg(t, "-P", "strata")
		}
		_ = os.Remove(markerFile)
		if restore != nil {
			restore(t)
		}
	})
}

// saveInstalled repacks the strata package installed before the test and
// saves /etc/strata; the function it returns reinstalls both.
func saveInstalled(t *testing.T) func(t *testing.T) {
	dir := t.TempDir()
	t.Logf("a strata package is installed (%s): repacking it to put it back after the test", status(t))
	cmd := exec.Command("dpkg-repack", "strata")
	cmd.Dir = dir
	// dpkg-repack may say "error" and still exit 0.
	if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(out, []byte("error")) {
		t.Fatalf("dpkg-repack strata (contrib/test-deps.sh installs it): %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "strata_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("dpkg-repack made %v", debs)
	}
	etc := filepath.Join(dir, "etc-strata.tar")
	if _, err := os.Stat("/etc/strata"); err == nil {
		run(t, "tar", "-C", "/etc", "-cpf", etc, "strata")
	}
	return func(t *testing.T) {
		dpkg(t, "-i", debs[0])
		if _, err := os.Stat(etc); err == nil {
			run(t, "tar", "-C", "/etc", "-xpf", etc)
		}
	}
}

// keepDataDir makes a data directory where the daemons keep their data
// and returns it: removing and purging the package must leave it alone.
func keepDataDir(t *testing.T) string {
	existed := true
	if _, err := os.Stat("/var/lib/strata"); err != nil {
		existed = false
	}
	dir := filepath.Join("/var/lib/strata", "debpkg-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "component"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		if !existed {
			_ = os.Remove("/var/lib/strata")
		}
	})
	return dir
}

func checkData(t *testing.T, dir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "component")); err != nil || string(b) != "data" {
		t.Errorf("the data directory %s did not survive: %q, %v", dir, b, err)
	}
}

func checkInstalled(t *testing.T) {
	for path, kind := range installed {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		switch kind {
		case "x":
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v, want an executable file", path, fi.Mode())
			}
		case "l":
			if target, err := filepath.EvalSymlinks(path); err != nil || target != "/usr/bin/strata" {
				t.Errorf("%s: want a link to /usr/bin/strata, got %q %v", path, target, err)
			}
		case "f":
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want -rw-r--r--", path, fi.Mode())
			}
		}
	}
	got := run(t, "dpkg-query", "-W", "-f=${Conffiles}", "strata")
	for _, f := range conffiles {
		if !strings.Contains(got, " "+f+" ") {
			t.Errorf("%s is not a conffile; dpkg lists:\n%s", f, got)
		}
	}
	fi, err := os.Stat(secretFile)
	if err != nil {
		t.Fatalf("postinst made no secret: %v", err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Errorf("%s: mode %v, %d bytes; want 0600, 32 bytes", secretFile, fi.Mode().Perm(), fi.Size())
	}
	for _, l := range strings.Split(string(readFile(t, "/etc/slurm/plugstack.conf.d/strata.conf")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			t.Errorf("plugstack.conf.d/strata.conf has an active line (it must be commented out): %q", l)
		}
	}
}

// checkUnits runs systemd-analyze verify on every unit the package
// installed (a template as an instance of it).
func checkUnits(t *testing.T) {
	units, _ := filepath.Glob("/lib/systemd/system/strata*")
	if len(units) != 4 {
		t.Errorf("units: %v, want 4", units)
	}
	for _, u := range units {
		if out, err := exec.Command("systemd-analyze", "verify", u).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
		}
	}
}

// checkFstabGenerator feeds the documented fstab line to systemd's fstab
// generator and checks the mount unit it makes.
func checkFstabGenerator(t *testing.T) {
	dir := t.TempDir()
	fstab := filepath.Join(dir, "fstab")
	line := "strata:mds1:7000,mds2:7000 /scratch fuse.strata defaults,_netdev 0 0\n"
	if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "gen")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/lib/systemd/system-generators/systemd-fstab-generator", out, out, out)
	cmd.Env = append(os.Environ(), "SYSTEMD_FSTAB="+fstab, "SYSTEMD_LOG_LEVEL=warning")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemd-fstab-generator: %v\n%s", err, b)
	}
	unit := string(readFile(t, filepath.Join(out, "scratch.mount")))
	for _, want := range []string{"What=strata:mds1:7000,mds2:7000", "Where=/scratch", "Type=fuse.strata", "Options=defaults,_netdev"} {
		if !strings.Contains(unit, want+"\n") {
			t.Errorf("scratch.mount lacks %q:\n%s", want, unit)
		}
	}
	if _, err := os.Lstat(filepath.Join(out, "remote-fs.target.requires", "scratch.mount")); err != nil {
		t.Errorf("_netdev: scratch.mount is not required by remote-fs.target: %v", err)
	}
	if b, err := exec.Command("systemd-analyze", "verify", filepath.Join(out, "scratch.mount")).CombinedOutput(); err != nil {
		t.Errorf("systemd-analyze verify scratch.mount: %v\n%s", err, b)
	}
}

// checkCompletion asks the installed bash completion what follows
// "strata mo" and "strata tier ".
func checkCompletion(t *testing.T) {
	for _, tc := range []struct{ words, want string }{
		{"strata mo", "mount"},
		{"strata tier ", "validate status drain"},
		{"strata mount --mds --fs", "--fsname"},
	} {
		words := strings.Fields(tc.words)
		if strings.HasSuffix(tc.words, " ") {
			words = append(words, "")
		}
		script := fmt.Sprintf(`source /usr/share/bash-completion/completions/strata
COMP_WORDS=(%s); COMP_CWORD=%d; _strata; echo "${COMPREPLY[*]}"`, quoteWords(words), len(words)-1)
		if got := strings.TrimSpace(run(t, "bash", "-c", script)); got != tc.want {
			t.Errorf("completion of %q: %q, want %q", tc.words, got, tc.want)
		}
	}
}

func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

// checkMount mounts a running test cluster with mount -t fuse.strata and
// with an fstab line, writes and reads files through it, reads them back
// with the installed strata binary, and unmounts with umount.
func checkMount(t *testing.T) {
	c := testcluster.Start(t, 2)
	src := "strata:" + c.MDSAddr()
	dir := t.TempDir()
	// The mount authenticates as this node with the test cluster's secret,
	// not the one postinst created in /etc/strata: mount(8) hands the
	// helper its environment, as a site's unit would set it.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, c.Secret(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRATA_SECRET_FILE", secret)
	want := make([]byte, 3<<20+123)
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}

	run(t, "mount", "-t", "fuse.strata", src, dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	if fs, source := mountOf(t, dir); fs != "fuse.strata" || source != src {
		t.Fatalf("mountinfo: %s is %q from %q, want fuse.strata from %q", dir, fs, source, src)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.bin"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "f.bin")); !bytes.Equal(got, want) {
		t.Errorf("read back through the mount: %d bytes differ from the %d written", len(got), len(want))
	}
	if got := run(t, "/usr/bin/strata", "cat", "--mds", c.MDSAddr(), "/f.bin"); got != string(want) {
		t.Errorf("strata cat of the file written through the mount: %d bytes, want the %d written", len(got), len(want))
	}
	umount(t, dir)

	fstab := filepath.Join(t.TempDir(), "fstab")
	line := fmt.Sprintf("%s %s fuse.strata defaults,_netdev 0 0\n", src, dir)
	if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "mount", "-T", fstab, dir)
	if got := readFile(t, filepath.Join(dir, "f.bin")); !bytes.Equal(got, want) {
		t.Errorf("read back after mounting from fstab: %d bytes differ from the %d written", len(got), len(want))
	}
	umount(t, dir)

	out, err := exec.Command("mount", "-t", "fuse.strata", "strata:127.0.0.1:1", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot reach the MDS at 127.0.0.1:1") {
		t.Errorf("mount of an MDS that is not there: %v, %q; want a failure naming it", err, out)
	}
	if fs, _ := mountOf(t, dir); fs != "" {
		t.Errorf("%s is mounted (%s) after a failed mount", dir, fs)
	}
}

// umount unmounts dir with umount(8) and waits until the strata mount
// process serving it is gone.
func umount(t *testing.T, dir string) {
	t.Helper()
	run(t, "umount", dir)
	if fs, _ := mountOf(t, dir); fs != "" {
		t.Fatalf("%s is still mounted (%s) after umount", dir, fs)
	}
	deadline := time.Now().Add(time.Minute)
	for servingProcess(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("the strata mount process of %s still runs a minute after umount", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servingProcess reports whether a strata mount process of dir runs.
func servingProcess(dir string) bool {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 2 && filepath.Base(args[0]) == "strata" && args[1] == "mount" && args[len(args)-1] == dir {
			return true
		}
	}
	return false
}

// mountOf returns the file system type and source of the mount on dir,
// "" if none.
func mountOf(t *testing.T, dir string) (fstype, source string) {
	t.Helper()
	for _, l := range strings.Split(string(readFile(t, "/proc/self/mountinfo")), "\n") {
		f := strings.Fields(l)
		for i, x := range f {
			if x == "-" && len(f) > i+2 && f[4] == dir {
				fstype, source = f[i+1], f[i+2]
			}
		}
	}
	return fstype, source
}

// status is the strata package's dpkg status: "ii" installed, "rc"
// removed with its configuration, "" not known.
func status(t *testing.T) string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Abbrev}", "strata").Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if s == "un" {
		return ""
	}
	return s
}

// dpkg runs dpkg with args, retrying while another dpkg or apt holds its
// lock.
func dpkg(t *testing.T, args ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := exec.Command("dpkg", args...).CombinedOutput()
		if err == nil {
			return
		}
		if !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		time.Sleep(time.Second)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
