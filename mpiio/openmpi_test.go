package mpiio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/mpiio"
)

// The OpenMPI tests run real mpirun jobs (Debian's openmpi-bin, 4 ranks,
// as root with the environment of docs/mpiio.md) against a real Strata:
// `strata dev` and `strata mount` as separate processes, built from this
// tree, with the shim and the test programs built by mpiio/shim/Makefile.

const fuseSuperMagic = 0x65735546

// dirLayout is the policy of the test directory: what a file gets when
// no hint is applied. It differs from the hints in every field.
const dirLayout = "width=2,unit=64K"

// stripeHints are the hints of the acceptance test.
func stripeHints() []string { return []string{"striping_factor=4", "striping_unit=1048576"} }

// world is one Strata, mounted, and the programs the tests run.
type world struct {
	t    *testing.T
	bin  string   // built programs
	tmp  string   // TMPDIR of the MPI jobs
	mnt  string   // the Strata mount point
	env  []string // the strata commands' environment: the dev cluster's secret (root on this node)
	mds  string   // MDS address
	root string   // module root
}

// skipLoudly skips the test, and says so on stderr where `go test`
// without -v shows it.
func skipLoudly(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "\n*** %s: SKIPPED: %s ***\n\n", t.Name(), msg)
	t.Skip(msg)
}

func needTools(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the OpenMPI tests start a Strata, a FUSE mount and mpirun jobs")
	}
	for _, tool := range []string{"mpicc", "mpirun", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipLoudly(t, "%s is not installed (apt-get install openmpi-bin libopenmpi-dev make): the MPI-IO shim is NOT tested", tool)
		}
	}
}

// newWorld builds everything, starts `strata dev` on free ports with 4
// data servers, mounts it, and makes /run with policy dirLayout. All of it
// is undone when the test ends.
func newWorld(t *testing.T) *world {
	needTools(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipLoudly(t, "/dev/fuse is missing: no FUSE mount, the MPI-IO shim is NOT tested")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	w := &world{t: t, bin: filepath.Join(work, "bin"), tmp: filepath.Join(work, "tmp"), mnt: filepath.Join(work, "mnt"), root: root,
		env: append(os.Environ(), "STRATA_SECRET_FILE="+filepath.Join(work, "dev", "secret"))}
	for _, d := range []string{w.bin, w.tmp, w.mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.run(root, "make", "--no-print-directory", "-C", filepath.Join(root, "mpiio", "shim"), "OUT="+w.bin)
	w.run(root, goCommand(), "build", "-o", filepath.Join(w.bin, "strata"), "./cmd/strata")

	dev := w.start("dev", "--dir", filepath.Join(work, "dev"), "--ds", "4", "--mds-addr", "127.0.0.1:0",
		"--raft-addr", "127.0.0.1:0", "--admin-addr", "off", "--ds-port", "0")
	w.mds = dev.waitLine(t, regexp.MustCompile(`^\s+mds\s+(\S+)`))
	mount := w.start("mount", "--mds", w.mds, w.mnt)
	t.Cleanup(func() { w.unmount(mount) })
	w.waitMounted(mount)

	if err := os.Mkdir(filepath.Join(w.mnt, "run"), 0o777); err != nil {
		t.Fatalf("mkdir on the mount: %v", err)
	}
	w.strata("setstripe", "--layout", dirLayout, "/run")
	return w
}

func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// run runs a build command in dir and fails the test on error.
func (w *world) run(dir, name string, args ...string) {
	w.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// strata runs a strata client command against the test's MDS.
func (w *world) strata(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "strata"), args...)
	cmd.Env = append(w.env, "STRATA_MDS="+w.mds)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// proc is a strata daemon process of the test.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	mu   sync.Mutex
	out  bytes.Buffer // stdout and stderr
	line chan string  // stdout lines, for waitLine
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start starts `strata args...`; it is stopped with SIGTERM when the test
// ends, unless it has exited.
func (w *world) start(args ...string) *proc {
	w.t.Helper()
	p := &proc{done: make(chan struct{}), line: make(chan string, 64)}
	p.cmd = exec.Command(filepath.Join(w.bin, "strata"), args...)
	p.cmd.Env = w.env
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		w.t.Fatalf("strata %s: %v", args[0], err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(p, sc.Text())
			select {
			case p.line <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			w.t.Errorf("strata %s did not stop on SIGTERM; output:\n%s", args[0], p.output())
		}
	})
	return p
}

// waitLine waits for a stdout line matching re and returns its first group.
func (p *proc) waitLine(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l := <-p.line:
			if m := re.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-p.done:
			t.Fatalf("strata %s exited (%v) early; output:\n%s", p.cmd.Args[1], p.err, p.output())
		case <-deadline:
			t.Fatalf("strata %s: no line matching %s in a minute; output:\n%s", p.cmd.Args[1], re, p.output())
		}
	}
}

// waitMounted waits until w.mnt is a FUSE mount.
func (w *world) waitMounted(p *proc) {
	w.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var st unix.Statfs_t
		if unix.Statfs(w.mnt, &st) == nil && st.Type == fuseSuperMagic {
			return
		}
		select {
		case <-p.done:
			if p.err != nil {
				w.t.Fatalf("strata mount exited: %v\n%s", p.err, p.output())
			}
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s is not mounted after a minute; strata mount says:\n%s", w.mnt, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unmount unmounts with `strata umount`, and waits for the mount process.
func (w *world) unmount(p *proc) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(filepath.Join(w.bin, "strata"), "umount", w.mnt).CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			w.t.Errorf("strata umount %s: %v\n%s", w.mnt, err, out)
			_ = exec.Command("fusermount3", "-uz", w.mnt).Run()
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		w.t.Errorf("strata mount did not exit after umount; output:\n%s", p.output())
	}
}

// job is one mpirun.
type job struct {
	io      string   // OMPI_MCA_io: ompio or romio321
	preload bool     // -x LD_PRELOAD=libstrata_mpiio.so
	env     []string // more -x VAR=value
	prog    string   // program in w.bin (or a path)
	prefix  string   // before the file's path, e.g. "ufs:"
	file    string   // path below /run
	args    []string // after the file
}

// mpirun runs j with 4 ranks and returns its stdout and stderr; it fails
// the test if the job fails.
func (w *world) mpirun(j job) (stdout, stderr string) {
	w.t.Helper()
	args := []string{"-np", "4"}
	if j.preload {
		args = append(args, "-x", "LD_PRELOAD="+filepath.Join(w.bin, "libstrata_mpiio.so"))
	}
	for _, e := range j.env {
		args = append(args, "-x", e)
	}
	prog := j.prog
	if !filepath.IsAbs(prog) {
		prog = filepath.Join(w.bin, prog)
	}
	args = append(append(args, prog, j.prefix+filepath.Join(w.mnt, "run", j.file)), j.args...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), mpiEnv(w.tmp, j.io)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("OMPI_MCA_io=%s mpirun %s: %v\nstdout:\n%s\nstderr:\n%s", j.io, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// mpiEnv is the environment of docs/mpiio.md for running as root, with
// the session directory in tmp.
func mpiEnv(tmp, io string) []string {
	return []string{
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1",
		"TMPDIR=" + tmp, "OMPI_MCA_io=" + io, "LD_PRELOAD=",
	}
}

// layoutOf returns the layout `strata getstripe` shows for /run/name.
func (w *world) layoutOf(name string) layout.Policy {
	w.t.Helper()
	out := w.strata("getstripe", "/run/"+name)
	m := regexp.MustCompile(`(?m)^layout:\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		w.t.Fatalf("strata getstripe /run/%s: no layout line:\n%s", name, out)
	}
	p, err := layout.Parse(m[1])
	if err != nil {
		w.t.Fatalf("strata getstripe /run/%s: %v", name, err)
	}
	p.Scheme, p.HasScheme = layout.Scheme{}, false
	return p
}

func (w *world) wantLayout(name, want string) {
	w.t.Helper()
	p, _ := layout.Parse(want)
	if got := w.layoutOf(name); got != p {
		w.t.Errorf("strata getstripe /run/%s: %s, want %s", name, got, p)
	}
}

// verified checks write_at_all's summary line.
func verified(t *testing.T, stdout string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)^write_at_all: 4 ranks wrote 16777216 bytes .* read back: 0 wrong bytes, 0 errors: OK$`).MatchString(stdout) {
		t.Errorf("write_at_all did not verify:\n%s", stdout)
	}
}

// TestOpenMPI is the matrix: 4 ranks write a shared file with
// MPI_File_write_at_all and hints striping_factor=4 striping_unit=1048576,
// under OMPIO and ROMIO, with and without the shim. The data verifies
// byte-exact every time; with the shim the file is width 4, unit 1M;
// without it the file has its directory's layout, since neither OMPIO nor
// ROMIO's generic driver acts on striping hints.
func TestOpenMPI(t *testing.T) {
	w := newWorld(t)
	for _, io := range []string{"ompio", "romio321"} {
		for _, preload := range []bool{true, false} {
			name := fmt.Sprintf("%s/shim=%v", io, preload)
			file := fmt.Sprintf("%s-shim-%v.dat", io, preload)
			t.Run(name, func(t *testing.T) {
				out, errOut := w.mpirun(job{io: io, preload: preload, prog: "write_at_all", file: file, args: stripeHints()})
				verified(t, out)
				// Open MPI 4.1's MPI_File_get_info returns the keys the
				// application passed, whatever is in effect (docs/mpiio.md).
				if !strings.Contains(out, "(get_info: 2 keys)") {
					t.Errorf("MPI_File_get_info did not return the 2 hints passed:\n%s", out)
				}
				if strings.Contains(errOut, "strata-mpiio") {
					t.Errorf("the shim said something:\n%s", errOut)
				}
				if preload {
					w.wantLayout(file, "width=4,unit=1M")
				} else {
					w.wantLayout(file, dirLayout)
				}
			})
		}
	}

	// STRATA_MPIIO_DEBUG=1 shows what rank 0 did: the layout string is the
	// one mpiio.Spec builds from the same hints.
	t.Run("debug", func(t *testing.T) {
		hints := map[string]string{"striping_factor": "4", "striping_unit": "1048576", "strata_scheme": "none"}
		args := append(stripeHints(), "strata_scheme=none", "cb_nodes=2")
		_, errOut := w.mpirun(job{io: "ompio", preload: true, env: []string{"STRATA_MPIIO_DEBUG=1"}, prog: "write_at_all", file: "debug.dat", args: args})
		want := "created with layout " + mpiio.Spec(hints)
		if strings.Count(errOut, want) != 1 {
			t.Errorf("stderr does not say %q once:\n%s", want, errOut)
		}
		// The second open (read-only, no hints) does nothing.
		if strings.Count(errOut, "layout hints") != 1 {
			t.Errorf("the shim acted on more than the first open:\n%s", errOut)
		}
		w.wantLayout("debug.dat", "width=4,unit=1M")
	})

	// A file that exists keeps its layout, silently: hints only shape new files.
	t.Run("existing", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(w.mnt, "run", "existing.dat"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut := w.mpirun(job{io: "romio321", preload: true, prog: "write_at_all", file: "existing.dat", args: stripeHints()})
		verified(t, out)
		if strings.Contains(errOut, "strata-mpiio") {
			t.Errorf("the shim said something:\n%s", errOut)
		}
		w.wantLayout("existing.dat", dirLayout)
	})

	// An invalid value is not fatal: the job completes, rank 0 says once
	// which hints it could not apply and why, and the file keeps its
	// directory's layout.
	for _, tc := range []struct{ io, bad string }{
		{"ompio", "striping_unit=3000"},
		{"romio321", "striping_factor=0"},
	} {
		t.Run("invalid/"+tc.io+"/"+tc.bad, func(t *testing.T) {
			file := "invalid-" + tc.io + ".dat"
			args := []string{tc.bad}
			if tc.bad != "striping_factor=0" {
				args = append(args, "striping_factor=4")
			}
			out, errOut := w.mpirun(job{io: tc.io, preload: true, prog: "write_at_all", file: file, args: args})
			verified(t, out)
			want := regexp.MustCompile(`(?m)^strata-mpiio: could not apply hints .*\b` + regexp.QuoteMeta(tc.bad) + `\b.* to ` +
				regexp.QuoteMeta(filepath.Join(w.mnt, "run", file)) + `: Invalid argument \(the file keeps its directory's layout\)$`)
			if !want.MatchString(errOut) || strings.Count(errOut, "strata-mpiio:") != 1 {
				t.Errorf("stderr, want one line matching %s:\n%s", want, errOut)
			}
			w.wantLayout(file, dirLayout)
		})
	}

	// ROMIO's file system prefix: the shim looks at the path behind it.
	// (OMPIO in Open MPI 4.1 does not accept prefixes at all.)
	t.Run("romio321/ufs_prefix", func(t *testing.T) {
		out, _ := w.mpirun(job{io: "romio321", preload: true, prog: "write_at_all", prefix: "ufs:", file: "prefix.dat", args: stripeHints()})
		verified(t, out)
		w.wantLayout("prefix.dat", "width=4,unit=1M")
	})

	// Linked with -lstrata_mpiio instead of preloaded.
	t.Run("linked", func(t *testing.T) {
		prog := filepath.Join(w.bin, "write_at_all_linked")
		w.run(w.root, "mpicc", "-O2", "-o", prog, filepath.Join(w.root, "mpiio", "testdata", "write_at_all.c"),
			"-L"+w.bin, "-Wl,-rpath,"+w.bin, "-lstrata_mpiio")
		out, _ := w.mpirun(job{io: "ompio", prog: prog, file: "linked.dat", args: stripeHints()})
		verified(t, out)
		w.wantLayout("linked.dat", "width=4,unit=1M")
	})

	t.Run("fortran", func(t *testing.T) { testFortran(t, w) })
	t.Run("romio_hints_file", func(t *testing.T) { testROMIOHintsFile(t, w) })
}

// testFortran opens the file with Fortran's MPI_FILE_OPEN (the mpi module,
// Open MPI's mpi_file_open_), which does not go through MPI_File_open.
func testFortran(t *testing.T, w *world) {
	if _, err := os.Stat(filepath.Join(w.bin, "fopen_f90")); err != nil {
		skipLoudly(t, "mpif90 is not installed, so fopen_f90 was not built: the shim's Fortran entry points are NOT tested")
	}
	out, errOut := w.mpirun(job{io: "ompio", preload: true, env: []string{"STRATA_MPIIO_DEBUG=1"}, prog: "fopen_f90", file: "fortran.dat", args: stripeHints()})
	if !strings.Contains(out, "fopen_f90: 4 ranks wrote 1 MiB each") || !strings.Contains(errOut, "Fortran MPI_FILE_OPEN") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	w.wantLayout("fortran.dat", "width=4,unit=1M")
	b, err := os.ReadFile(filepath.Join(w.mnt, "run", "fortran.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4<<20 {
		t.Fatalf("fortran.dat has %d bytes, want %d", len(b), 4<<20)
	}
	for i := 0; i < len(b); i += 4 {
		if v := binary.LittleEndian.Uint32(b[i:]); v != uint32(i/4) {
			t.Fatalf("fortran.dat: integer %d is %d, want %d", i/4, v, i/4)
		}
	}
}

// testROMIOHintsFile checks that ROMIO reads the file `strata mpiio hints`
// prints (comments and all) and uses its hints, on the mount.
func testROMIOHintsFile(t *testing.T, w *world) {
	hintsFile := filepath.Join(w.tmp, "romio-hints.txt")
	text := w.strata("mpiio", "hints", "--dir", "/run", "--layout", "width=4,unit=1M", "--nodes", "1")
	if err := os.WriteFile(hintsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := w.mpirun(job{io: "romio321", env: []string{"ROMIO_HINTS=" + hintsFile, "ROMIO_PRINT_HINTS=1"}, prog: "write_at_all", file: "romio-hints.dat"})
	verified(t, out)
	printed := out + errOut
	for _, kv := range [][2]string{{"cb_buffer_size", "16777216"}, {"romio_cb_write", "enable"}, {"romio_ds_write", "disable"},
		{"striping_unit", "1048576"}, {"cb_config_list", `\*:1`}, {"cb_nodes", "1"}} {
		re := regexp.MustCompile(`key = ` + kv[0] + `\s+value = ` + kv[1] + `\s`)
		if !re.MatchString(printed) {
			t.Errorf("ROMIO does not report %s=%s:\n%s", kv[0], kv[1], printed)
		}
	}
	if strings.Contains(printed, "key = #") {
		t.Errorf("ROMIO read a comment as a hint:\n%s", printed)
	}
}
