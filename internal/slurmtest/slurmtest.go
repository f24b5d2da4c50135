package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a test cluster. The zero value is four nodes, the
// mode up.sh picks, the repo's SPANK plugin (built with make spank) and a
// strata binary built from ./cmd/strata, no slurmrestd.
type Options struct {
	Nodes int // compute nodes n1..nN; 0 means 4
	// Mode is "auto", "netns" or "multi" (contrib/devcluster/up.sh); ""
	// takes $STRATA_DEVCLUSTER_MODE, else auto.
	Mode string
	REST bool // start slurmrestd on Dir/run/rest/slurmrestd.sock
	// JWT (with REST) adds auth/jwt to slurm.conf and a second slurmrestd
	// with rest_auth/jwt on 127.0.0.1 (Cluster.RESTURL, Cluster.Token).
	JWT bool
	// NoSpank runs Slurm without Strata's SPANK plugin.
	NoSpank bool
	// Strata is the strata binary the plugin runs; "" builds ./cmd/strata.
	Strata string
	// AgentSocket is the plugin's socket= argument (%n is the node name);
	// "" means Dir/run/agent/%n.sock.
	AgentSocket string
	// SpankArgs are more plugstack.conf arguments, e.g. "timeout=10".
	SpankArgs string
	// CredExpire is slurm.conf's AuthInfo cred_expire in seconds (0:
	// Slurm's 120), which is also how long a requeued job waits before it
	// may start again.
	CredExpire int
}

// Cluster is a running devcluster.
type Cluster struct {
	Dir         string // everything of this cluster: etc/, log/, run/, out/ (mode 1777)
	Mode        string // netns or multi, as up.sh chose
	Nodes       []string
	AgentSocket string // the plugin's socket pattern
	Strata      string // the strata binary the plugin runs
	t           testing.TB
	root        string
	downOnce    sync.Once
}

var buildMu sync.Mutex

// Start starts a cluster for the test and registers its teardown with
// t.Cleanup. It fails the test if the cluster does not come up, and skips
// it (loudly) only when Slurm is missing and cannot be installed, or the
// test does not run as root.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("slurmtest: -short: skipping a test that runs a real multi-node Slurm")
	}
	root := RepoRoot(t)
	requireSlurm(t, root)
	if opts.Nodes == 0 {
		opts.Nodes = 4
	}
	// t.TempDir is too long for unix socket paths (munge, the agent's).
	dir, err := os.MkdirTemp("/tmp", "sst-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, t: t, root: root}
	t.Cleanup(c.Down)
	c.Strata = opts.Strata
	if c.Strata == "" && !opts.NoSpank {
		c.Strata = filepath.Join(dir, "bin", "strata")
		c.goBuild(c.Strata, "./cmd/strata")
	}
	spank := ""
	if !opts.NoSpank {
		spank = BuildPlugin(t)
	}
	c.AgentSocket = opts.AgentSocket
	if c.AgentSocket == "" {
		c.AgentSocket = filepath.Join(dir, "run", "agent", "%n.sock")
	}
	if opts.Mode == "" {
		opts.Mode = os.Getenv("STRATA_DEVCLUSTER_MODE") // a developer's choice for the whole run
	}
	rest, jwt := "0", "0"
	if opts.REST {
		rest = "1"
	}
	if opts.JWT {
		jwt = "1"
	}
	cmd := exec.Command(filepath.Join(root, "contrib", "devcluster", "up.sh"))
	cmd.Env = append(os.Environ(),
		"STRATA_DEVCLUSTER_DIR="+dir,
		"STRATA_DEVCLUSTER_NODES="+strconv.Itoa(opts.Nodes),
		"STRATA_DEVCLUSTER_MODE="+opts.Mode,
		"STRATA_DEVCLUSTER_REST="+rest,
		"STRATA_DEVCLUSTER_JWT="+jwt,
		"STRATA_DEVCLUSTER_SPANK="+spank,
		"STRATA_DEVCLUSTER_STRATA="+c.Strata,
		"STRATA_DEVCLUSTER_AGENT_SOCKET="+c.AgentSocket,
		"STRATA_DEVCLUSTER_SPANK_ARGS="+opts.SpankArgs,
		"STRATA_DEVCLUSTER_CRED_EXPIRE="+credExpire(opts.CredExpire),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("devcluster up (%s):\n%s", dir, out)
	if err != nil {
		t.Fatalf("contrib/devcluster/up.sh: %v", err)
	}
	mode, _ := os.ReadFile(filepath.Join(dir, "run", "mode"))
	c.Mode = strings.TrimSpace(string(mode))
	for i := 1; i <= opts.Nodes; i++ {
		c.Nodes = append(c.Nodes, "n"+strconv.Itoa(i))
	}
	return c
}

// credExpire is the environment's form of Options.CredExpire.
func credExpire(s int) string {
	if s <= 0 {
		return ""
	}
	return strconv.Itoa(s)
}

// RepoRoot is the directory of the module's go.mod, found upward from the
// test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Fatal("slurmtest: no go.mod above the working directory")
		}
		d = parent
	}
}

// BuildPlugin builds spank/spank_strata.so with the top Makefile's
// `make spank` (a no-op when it is up to date) and returns its path.
func BuildPlugin(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	buildMu.Lock()
	defer buildMu.Unlock()
	out, err := exec.Command("make", "-s", "-C", root, "spank").CombinedOutput()
	if err != nil {
		t.Fatalf("make spank: %v\n%s", err, out)
	}
	return filepath.Join(root, "spank", "spank_strata.so")
}

func (c *Cluster) goBuild(out, pkg string) {
	c.t.Helper()
	goCmd := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "build", "-o", out, pkg)
	cmd.Dir = c.root
	if b, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// requireSlurm skips the test when this machine cannot run a devcluster:
// not root, or Slurm missing even after contrib/test-deps.sh.
func requireSlurm(t testing.TB, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("\n*** slurmtest: SKIPPING a real-Slurm test: it must run as root (slurmd runs jobs as their users) ***")
	}
	missing := func() []string {
		var m []string
		for _, b := range []string{"munged", "slurmctld", "slurmd", "slurmstepd", "sbatch", "srun", "salloc", "scontrol", "nsenter"} {
			if _, err := exec.LookPath(b); err != nil {
				if _, err := os.Stat("/usr/sbin/" + b); err != nil {
					m = append(m, b)
				}
			}
		}
		if _, err := os.Stat("/usr/include/slurm/spank.h"); err != nil {
			m = append(m, "spank.h")
		}
		return m
	}
	if len(missing()) == 0 {
		return
	}
	out, err := exec.Command(filepath.Join(root, "contrib", "test-deps.sh")).CombinedOutput()
	if m := missing(); len(m) > 0 {
		t.Skipf("\n*** slurmtest: SKIPPING a real-Slurm test: %s missing and contrib/test-deps.sh could not install them (%v):\n%s ***", strings.Join(m, ", "), err, out)
	}
}

// Env is the environment Slurm commands of this cluster run with.
func (c *Cluster) Env() []string {
	// Jobs inherit it: their strata commands prove their uid with this
	// cluster's munged (docs/security.md).
	return append(os.Environ(), "SLURM_CONF="+filepath.Join(c.Dir, "etc", "slurm.conf"),
		"STRATA_MUNGE_SOCKET="+filepath.Join(c.Dir, "munge", "munge.socket"))
}

// CmdError is a Slurm command that failed; Output is what it printed.
type CmdError struct {
	Args   []string
	Output string
	Err    error
}

func (e *CmdError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Output))
}

func (e *CmdError) Unwrap() error { return e.Err }

// Command is a Slurm command (or any program) with the cluster's
// environment, run in Dir/out.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	cmd.Dir = filepath.Join(c.Dir, "out")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs a command with the cluster's environment for at most a
// minute and returns its stdout; a failure is a *CmdError with stdout and
// stderr.
func (c *Cluster) Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := c.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &CmdError{Args: append([]string{name}, args...), Output: stdout.String() + stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// Sbatch submits a batch job (sbatch --parsable ARGS...) and returns its
// id. Give -o to choose the output file; the default is Dir/out/slurm-%j.out.
func (c *Cluster) Sbatch(args ...string) (uint32, error) {
	out, err := c.Run("sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return 0, err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return uint32(n), nil
}

// REST GETs path (e.g. /slurm/v0.0.38/nodes) from the cluster's
// slurmrestd (Options.REST) over its unix socket, as root (rest_auth/local).
func (c *Cluster) REST(path string) (string, error) {
	sock := filepath.Join(c.Dir, "run", "rest", "slurmrestd.sock")
	hc := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://slurmrestd" + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

// RESTURL is the http://127.0.0.1:PORT of the cluster's rest_auth/jwt
// slurmrestd (Options.JWT).
func (c *Cluster) RESTURL() (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, "run", "rest", "jwt-url"))
	return strings.TrimSpace(string(b)), err
}

// Token returns a JWT for user (scontrol token), valid for an hour.
func (c *Cluster) Token(user string) (string, error) {
	out, err := c.Run("scontrol", "token", "username="+user, "lifespan=3600")
	if err != nil {
		return "", err
	}
	tok, ok := strings.CutPrefix(strings.TrimSpace(out), "SLURM_JWT=")
	if !ok || tok == "" {
		return "", fmt.Errorf("scontrol token printed %q", out)
	}
	return tok, nil
}

// Job is a job's record in slurmctld (scontrol show job).
type Job struct {
	ID       uint32
	State    string // COMPLETED, FAILED, ...
	ExitCode string // "0:0"
	Fields   map[string]string
}

// Wait waits up to a minute until the job has left the queue (its epilogs
// have run on every node) and returns its record.
func (c *Cluster) Wait(id uint32) (Job, error) {
	return c.WaitFor(id, time.Minute)
}

// WaitFor is Wait with another bound, for jobs that move a lot of data.
func (c *Cluster) WaitFor(id uint32, d time.Duration) (Job, error) {
	deadline := time.Now().Add(d)
	for {
		out, err := c.Run("squeue", "-h", "-j", strconv.FormatUint(uint64(id), 10), "-o", "%T")
		if err == nil && strings.TrimSpace(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			return Job{}, fmt.Errorf("job %d still in the queue after %v (state %q, err %v)", id, d, strings.TrimSpace(out), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c.ShowJob(id)
}

// ShowJob returns the job's record.
func (c *Cluster) ShowJob(id uint32) (Job, error) {
	out, err := c.Run("scontrol", "show", "job", "-o", strconv.FormatUint(uint64(id), 10))
	if err != nil {
		return Job{}, err
	}
	j := Job{ID: id, Fields: fields(out)}
	j.State, j.ExitCode = j.Fields["JobState"], j.Fields["ExitCode"]
	return j, nil
}

// NodeStates maps each node to its state as sinfo prints it, lower case
// ("idle", "drained", "mixed", "allocated", "down*" ...).
func (c *Cluster) NodeStates() (map[string]string, error) {
	out, err := c.Run("sinfo", "-h", "-N", "-o", "%N %T")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if n, s, ok := strings.Cut(line, " "); ok {
			m[n] = strings.TrimSpace(s)
		}
	}
	return m, nil
}

// Node returns a node's record (scontrol show node): State, Reason, ...
func (c *Cluster) Node(name string) (map[string]string, error) {
	out, err := c.Run("scontrol", "show", "node", "-o", name)
	if err != nil {
		return nil, err
	}
	return fields(out), nil
}

// WaitNodes waits up to 30 s until every node is in state (e.g. "idle").
func (c *Cluster) WaitNodes(state string) (map[string]string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c.NodeStates()
		ok := err == nil && len(st) == len(c.Nodes)
		for _, s := range st {
			ok = ok && s == state
		}
		if ok {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("nodes not all %s after 30 s: %v (err %v)", state, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Down stops the cluster (down.sh) and removes its directory, keeping the
// logs in the test log when the test failed. Safe to call twice.
func (c *Cluster) Down() {
	c.downOnce.Do(func() {
		cmd := exec.Command(filepath.Join(c.root, "contrib", "devcluster", "down.sh"))
		cmd.Env = append(os.Environ(), "STRATA_DEVCLUSTER_DIR="+c.Dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			c.t.Errorf("contrib/devcluster/down.sh: %v\n%s", err, out)
		}
		if c.t.Failed() {
			c.dumpLogs()
		}
		if err := os.RemoveAll(c.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.t.Errorf("remove %s: %v", c.Dir, err)
		}
	})
}

// dumpLogs copies the tail of every daemon log into the test log.
func (c *Cluster) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		c.t.Logf("--- %s (tail) ---\n%s", filepath.Base(l), b)
	}
}

// fields parses scontrol's one-line KEY=VALUE output.
func fields(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}
