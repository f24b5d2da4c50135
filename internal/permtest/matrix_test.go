package permtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/mungetest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(HelperEnv) != "" {
		if err := Helper(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The test's accounts: the owner of the fixtures, a member of their group
// through a supplementary group only, and a user in neither.
const (
	group = "stperm_grp"
	owner = "stperm_owner"
	mate  = "stperm_mate"
	other = "stperm_other"
)

// caller is one identity the operations run as. A squashed caller is root
// on a node the MDS squashes (nodemap): Strata treats it as nobody, so the
// kernel's answers for it are nobody's.
type caller struct {
	name     string
	uid, gid int
	squashed bool
}

// nobody is the identity a squashed root gets (identity.NobodyID).
const nobody = identity.NobodyID

// accounts creates the group and users when missing and returns them.
func accounts(t *testing.T) (grp int, callers []caller) {
	t.Helper()
	if _, err := user.LookupGroup(group); err != nil {
		run(t, "groupadd", group)
	}
	for _, u := range []struct {
		name   string
		groups []string
	}{{owner, []string{group}}, {mate, []string{group}}, {other, nil}} {
		if _, err := user.Lookup(u.name); err != nil {
			args := []string{"--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin"}
			if len(u.groups) > 0 {
				args = append(args, "--groups", strings.Join(u.groups, ","))
			}
			run(t, "useradd", append(args, u.name)...)
		}
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	grp, _ = strconv.Atoi(g.Gid)
	for _, name := range []string{owner, mate, other} {
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		callers = append(callers, caller{name: name, uid: uid, gid: gid})
	}
	return grp, append(callers, caller{name: "root"}, caller{name: "squashed-root", squashed: true})
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// helper runs job as c in a copy of the test binary (bin) and returns its
// result. On the local directory (kernel) a squashed root runs as nobody,
// with no groups.
func helper(bin string, c caller, job Job, kernel bool) (Result, error) {
	var cmd *exec.Cmd
	switch {
	case c.squashed && kernel:
		cmd = exec.Command("setpriv", "--reuid", strconv.Itoa(nobody), "--regid", strconv.Itoa(nobody),
			"--clear-groups", "--", bin)
	case c.uid == 0:
		cmd = exec.Command(bin)
	default:
		cmd = exec.Command("setpriv", "--reuid", strconv.Itoa(c.uid), "--regid", strconv.Itoa(c.gid),
			"--init-groups", "--", bin)
	}
	in, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errOut
	cmd.Env = append(os.Environ(), HelperEnv+"=1")
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helper as %s: %w: %s", c.name, err, errOut.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("helper as %s: %w: %q", c.name, err, out.String())
	}
	return res, nil
}

// copyBinary copies the test binary where every test account may run it.
func copyBinary(t *testing.T, dir string) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "permtest.bin")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// state is what a watched entry looks like after the operations.
type state struct {
	exists   bool
	mode     uint32
	uid, gid uint32
}

func (s state) String() string {
	if !s.exists {
		return "absent"
	}
	return fmt.Sprintf("mode %04o uid %d gid %d", s.mode, s.uid, s.gid)
}

func statOS(p string) state {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return state{}
	}
	return state{exists: true, mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid}
}

// TestMatrix runs every operation as every caller on every case, on a
// local directory (the oracle), through a FUSE mount and through the
// client library, and compares the answers and what they leave.
func TestMatrix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING THE PERMISSION MATRIX: it needs root (test accounts, setpriv): NOTHING WAS TESTED")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("SKIPPING THE PERMISSION MATRIX: /dev/fuse is missing (%v): NOTHING WAS TESTED", err)
	}
	grp, callers := accounts(t)
	args := Args{ChownUid: uint32(callers[2].uid), ChgrpGid: uint32(callers[0].gid)}
	own := callers[0]

	base, err := os.MkdirTemp("", "strata-permtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyBinary(t, base)
	local, mnt := filepath.Join(base, "local"), filepath.Join(base, "mnt")
	for _, p := range []string{local, mnt} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The library's callers prove their uid with a real munged; the mount
	// is a node daemon acting for each caller (docs/security.md).
	// Root on 127.0.0.2 is squashed: the MDS listens on every address so
	// that the squashed callers can reach it from there.
	squashAddr(t)
	sock := mungetest.Start(t)
	var squashedMDS string
	cl := testcluster.Start(t, 2, testcluster.WithMDSConfig(func(c *mds.Config) {
		c.MungeSocket = sock
		_, port, _ := net.SplitHostPort(c.Listen)
		c.Listen, squashedMDS = "0.0.0.0:"+port, "127.0.0.2:"+port
		c.Squash = []identity.Rule{{Net: netip.MustParsePrefix("127.0.0.2/32"), Squash: identity.SquashRoot, Uid: nobody, Gid: nobody}}
	}))
	mount(t, cl.Client(), mnt)
	// The squashed root's mount: the same namespace, reached from 127.0.0.2.
	sqCfg := client.DefaultConfig()
	sqCfg.MDS, sqCfg.Auth = squashedMDS, cl.Credentials()
	sqClient, err := client.New(sqCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqClient.Close() })
	mntSq := filepath.Join(base, "mnt-squashed")
	if err := os.Mkdir(mntSq, 0o755); err != nil {
		t.Fatal(err)
	}
	mount(t, sqClient, mntSq)
	root := cl.Client()
	ctx := testcluster.Context(t, 5*time.Minute)

	// The three places the fixtures live: OS paths for the local
	// directory and the mount, Strata paths for the library.
	type place struct {
		name string
		os   string // where root builds fixtures
		job  string // the path the helper uses
		lib  bool
		sq   string // the path a squashed caller uses
	}
	places := []place{
		{"kernel", local, local, false, local},
		{"fuse", filepath.Join(mnt, "fuse"), filepath.Join(mnt, "fuse"), false, filepath.Join(mntSq, "fuse")},
		{"lib", filepath.Join(mnt, "lib"), "/lib", true, "/lib"},
	}
	for _, p := range places[1:] {
		if err := os.Mkdir(p.os, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fix := func(fc fixCase, c caller) string { return fc.name + "-" + c.name }
	// Built concurrently: the MDS commits concurrent changes together.
	var wg sync.WaitGroup
	errs := make(chan error, len(places)*len(cases)*len(callers))
	for _, p := range places {
		for _, fc := range cases {
			for _, c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := build(filepath.Join(p.os, fix(fc, c)), fc, own.uid, grp); err != nil {
						errs <- fmt.Errorf("%s fixture %s: %w", p.name, fix(fc, c), err)
					}
				}()
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// answers[place][fixture][op]; states[place][fixture][entry].
	answers := map[string]Result{}
	states := map[string]map[string]map[string]state{}
	for _, p := range places {
		answers[p.name] = Result{}
		states[p.name] = map[string]map[string]state{}
		results := make([]Result, len(callers))
		errs := make([]error, len(callers))
		for i, c := range callers {
			job := Job{Lib: p.lib, MDS: cl.MDSAddr(), Munge: sock, Args: args}
			dir := p.job
			if c.squashed {
				job.MDS, dir = squashedMDS, p.sq
			}
			for _, fc := range cases {
				job.Dirs = append(job.Dirs, dir+"/"+fix(fc, c))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = helper(bin, c, job, p.name == "kernel")
			}()
		}
		wg.Wait()
		for i := range callers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			for dir, ops := range results[i] {
				answers[p.name][filepath.Base(dir)] = ops
			}
		}
		for _, fc := range cases {
			for _, c := range callers {
				x := fix(fc, c)
				states[p.name][x] = map[string]state{}
				for _, w := range watched {
					if p.lib {
						states[p.name][x][w] = statLib(ctx, root, p.job+"/"+x+"/"+w)
					} else {
						states[p.name][x][w] = statOS(filepath.Join(p.os, x, w))
					}
				}
			}
		}
	}

	denied, allowed := 0, 0
	for _, fc := range cases {
		for _, c := range callers {
			x := fix(fc, c)
			for _, op := range ops {
				want := syscall.Errno(answers["kernel"][x][op.name])
				if want == 0 {
					allowed++
				} else {
					denied++
				}
				for _, p := range places[1:] {
					if got := syscall.Errno(answers[p.name][x][op.name]); got != want {
						t.Errorf("%s as %s, %s: %s answers %q, the kernel %q", fc.name, c.name, op.name, p.name, errName(got), errName(want))
					}
				}
			}
			for _, w := range watched {
				want := states["kernel"][x][w]
				for _, p := range places[1:] {
					if got := states[p.name][x][w]; got != want {
						t.Errorf("%s as %s, %s afterwards: %s has %v, the kernel %v", fc.name, c.name, w, p.name, got, want)
					}
				}
			}
		}
	}
	// A matrix the kernel answered all alike would prove nothing.
	if denied < 100 || allowed < 100 {
		t.Errorf("the kernel allowed %d and refused %d operations: the matrix does not exercise permissions", allowed, denied)
	}
	t.Logf("%d cases x %d callers x %d operations: the kernel allowed %d and refused %d",
		len(cases), len(callers), len(ops), allowed, denied)
}

// squashAddr makes 127.0.0.2 the source address of connections to it
// (the loopback's route gives 127.0.0.1 otherwise), so that a client that
// dials 127.0.0.2 comes from there; it is removed when the test ends if
// the test added it.
func squashAddr(t *testing.T) {
	t.Helper()
	out, err := exec.Command("ip", "addr", "add", "127.0.0.2/32", "dev", "lo").CombinedOutput()
	switch {
	case err == nil:
		t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", "127.0.0.2/32", "dev", "lo").Run() })
	case strings.Contains(string(out), "File exists"):
	default:
		t.Fatalf("ip addr add 127.0.0.2/32 dev lo: %v: %s", err, out)
	}
}

// mount mounts c's namespace on dir until the test ends.
func mount(t *testing.T, c *client.Client, dir string) {
	t.Helper()
	srv, err := fuse.Mount(context.Background(), c, dir, fuse.DefaultOptions())
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// ErrDetached: a mount namespace another test made while this
		// mount was up holds a copy of it; it is gone from ours.
		if err := srv.Unmount(ctx, true); err != nil && !errors.Is(err, fuse.ErrDetached) {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

func statLib(ctx context.Context, c *client.Client, p string) state {
	a, err := c.Lstat(ctx, p)
	if err != nil {
		return state{}
	}
	return state{exists: true, mode: a.Mode & 0o7777, uid: a.Uid, gid: a.Gid}
}

func errName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return e.Error()
}
