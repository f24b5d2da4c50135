// Package tiertest starts real job tiers for tests and benchmarks: a real
// multi-node Slurm (internal/slurmtest, with the real spank_strata.so)
// plus contrib/devcluster/strata-up.sh, which adds a Strata global
// namespace (strata mds and two strata ds processes) and a real
// `strata agent` process on every Slurm node, each node in a mount
// namespace of its own. It tears them down (strata-down.sh, then the
// devcluster) when the test ends. It has no policy of its own.
package tiertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/slurmtest"
)

// Env is a devcluster with Strata on it.
type Env struct {
	*slurmtest.Cluster
	MDS    string         // the global namespace's MDS address
	Admin  string         // its admin API, http://HOST:PORT
	Global *client.Client // the global namespace, as root
	tb     testing.TB
	root   string
}

// Options configure Start.
type Options struct {
	Nodes int // Slurm nodes; 0 means 4
	// AgentArgs are more `strata agent` flags for every node.
	AgentArgs string
	// SpankArgs are more plugstack.conf arguments.
	SpankArgs string
	// Mode is the devcluster's mode: "" (auto), "netns" or "multi".
	Mode string
	// CredExpire is slurmtest.Options.CredExpire.
	CredExpire int
}

// Start starts Slurm with Strata for the test and registers their
// teardown.
func Start(tb testing.TB, o Options) *Env {
	tb.Helper()
	if o.Nodes == 0 {
		o.Nodes = 4
	}
	c := slurmtest.Start(tb, slurmtest.Options{Nodes: o.Nodes, SpankArgs: o.SpankArgs, Mode: o.Mode, CredExpire: o.CredExpire})
	e := &Env{Cluster: c, tb: tb, root: slurmtest.RepoRoot(tb)}
	tb.Cleanup(e.down) // runs before the cluster's own teardown
	cmd := exec.Command(filepath.Join(e.root, "contrib", "devcluster", "strata-up.sh"))
	cmd.Env = append(os.Environ(), "STRATA_DEVCLUSTER_DIR="+c.Dir, "STRATA_DEVCLUSTER_STRATA="+c.Strata, "STRATA_AGENT_ARGS="+o.AgentArgs)
	out, err := cmd.CombinedOutput()
	tb.Logf("strata-up.sh:\n%s", out)
	if err != nil {
		tb.Fatalf("contrib/devcluster/strata-up.sh: %v", err)
	}
	env, err := os.ReadFile(filepath.Join(c.Dir, "strata", "env.sh"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "export STRATA_MDS="); ok {
			e.MDS = v
		}
		if v, ok := strings.CutPrefix(line, "export STRATA_ADMIN="); ok {
			e.Admin = v
		}
	}
	secret, err := capability.ReadSecretFile(e.SecretFile())
	if err != nil {
		tb.Fatal(err)
	}
	auth := identity.NewNodeCredentials(secret, identity.RoleNode, "tiertest", "")
	if e.Global, err = client.New(client.Config{MDS: e.MDS, Timeout: time.Minute, Auth: auth}); err != nil {
		tb.Fatal(err)
	}
	return e
}

// SecretFile is the global namespace's cluster secret file.
func (e *Env) SecretFile() string { return filepath.Join(e.Dir, "strata", "mds", "secret") }

func (e *Env) down() {
	if e.Global != nil {
		e.Global.Close()
	}
	cmd := exec.Command(filepath.Join(e.root, "contrib", "devcluster", "strata-down.sh"))
	cmd.Env = append(os.Environ(), "STRATA_DEVCLUSTER_DIR="+e.Dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.tb.Errorf("strata-down.sh: %v\n%s", err, out)
	}
}

// Strata runs the strata command line against the global namespace and
// returns its combined output.
func (e *Env) Strata(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Cluster.Strata, args...)
	cmd.Env = append(os.Environ(), "STRATA_MDS="+e.MDS, "STRATA_SECRET_FILE="+e.SecretFile())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pidFile reads a PID file of the devcluster's run directory.
func (e *Env) pidFile(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(e.Dir, "run", name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// KillAgent kills a node's agent with sig (SIGKILL: a crash; SIGTERM:
// systemctl restart) and waits until it is gone.
func (e *Env) KillAgent(node string, sig syscall.Signal) error {
	pid, err := e.pidFile("agent." + node + ".pid")
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("agent of %s (pid %d) still runs 10 s after %v", node, pid, sig)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// StartAgent starts a node's agent again, in the node's namespaces.
func (e *Env) StartAgent(node string) error {
	cmd := exec.Command(filepath.Join(e.root, "contrib", "devcluster", "strata-up.sh"), "agent", node)
	cmd.Env = append(os.Environ(), "STRATA_DEVCLUSTER_DIR="+e.Dir, "STRATA_DEVCLUSTER_STRATA="+e.Cluster.Strata)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("strata-up.sh agent %s: %v: %s", node, err, out)
	}
	return nil
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// TierState is what a node's agent persists of a job's tier (the parts
// tests look at).
type TierState struct {
	MountPath string `json:"mount_path"`
	MDSAddr   string `json:"mds_addr"`
	Phase     string `json:"phase"`
	Procs     map[string]struct {
		PID int `json:"pid"`
	} `json:"procs"`
}

// StateFile is where a node's agent keeps the state of job's tier.
func (e *Env) StateFile(node string, job uint32) string {
	return filepath.Join(e.Dir, "strata", "agent", node, "jobs", strconv.FormatUint(uint64(job), 10)+".json")
}

// Tier returns a node's persisted state of job's tier.
func (e *Env) Tier(node string, job uint32) (*TierState, error) {
	b, err := os.ReadFile(e.StateFile(node, job))
	if err != nil {
		return nil, err
	}
	var st TierState
	return &st, json.Unmarshal(b, &st)
}

// MountPath is where job's tier is mounted on every node.
func (e *Env) MountPath(job uint32) string {
	return filepath.Join(e.Dir, "mnt", strconv.FormatUint(uint64(job), 10))
}

// NVMeDir is a node's tier data directory of job.
func (e *Env) NVMeDir(node string, job uint32) string {
	return filepath.Join(e.Dir, "strata", "nvme", node, "job-"+strconv.FormatUint(uint64(job), 10))
}

// Mounted reports whether dir is a mount point in node's mount namespace
// (that of its slurmd, where the node's jobs and agent run).
func (e *Env) Mounted(node, dir string) (bool, error) {
	pid, err := e.pidFile("slurmd." + node + ".pid")
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 && fs[4] == dir {
			return true, nil
		}
	}
	return false, sc.Err()
}

// WaitFile waits up to d for a file to exist.
func WaitFile(p string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", p, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MountGlobal mounts the global namespace on dir in node's namespaces
// (mount, and network in netns mode), as the node's jobs would see it,
// and returns a function that unmounts it.
func (e *Env) MountGlobal(node, dir string) (func(), error) {
	pid, err := e.pidFile("slurmd." + node + ".pid")
	if err != nil {
		return nil, err
	}
	args := []string{"--mount=/proc/" + strconv.Itoa(pid) + "/ns/mnt"}
	mode, _ := os.ReadFile(filepath.Join(e.Dir, "run", "mode"))
	id, _ := os.ReadFile(filepath.Join(e.Dir, "run", "id"))
	if strings.TrimSpace(string(mode)) == "netns" {
		args = append(args, "--net=/run/netns/strata-"+strings.TrimSpace(string(id))+"-"+node)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("nsenter", append(args, e.Cluster.Strata, "mount", "--mds", e.MDS, dir)...)
	// The mount is a node daemon: it proves it with the cluster secret,
	// as the node's agent does (without it: "no credential").
	cmd.Env = append(os.Environ(), "STRATA_SECRET_FILE="+e.SecretFile())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m, err := e.Mounted(node, dir); err == nil && m {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("global namespace not mounted on %s in %s after 10 s: %s", dir, node, strings.TrimSpace(out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HookTimes returns, from node's agent log, when each of its op hooks
// (prolog, epilog) of job started and ended.
func (e *Env) HookTimes(node, op string, job uint32) (start, end time.Time, err error) {
	b, err := os.ReadFile(filepath.Join(e.Dir, "log", "agent."+node+".log"))
	if err != nil {
		return start, end, err
	}
	want := fmt.Sprintf(" op=%s job_id=%d ", op, job)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "msg=hook ") || !strings.Contains(line, want) {
			continue
		}
		var ts, dur string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "time="); ok {
				ts = v
			}
			if v, ok := strings.CutPrefix(f, "duration="); ok {
				dur = v
			}
		}
		end, err = time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return start, end, err
		}
		d, err := time.ParseDuration(dur)
		if err != nil {
			return start, end, err
		}
		return end.Add(-d), end, nil
	}
	return start, end, fmt.Errorf("agent.%s.log has no %s of job %d", node, op, job)
}

// AgentArgs returns the command line a node's running agent was started
// with, without the binary: "agent", then its flags.
func (e *Env) AgentArgs(node string) ([]string, error) {
	pid, err := e.pidFile("agent." + node + ".pid")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	// nsenter [--net=...] --mount=... STRATA agent ...
	for i, a := range args {
		if a == "agent" {
			return args[i:], nil
		}
	}
	return nil, fmt.Errorf("agent of %s: no 'agent' in its command line %q", node, args)
}

// OnNode runs a command in node's namespaces (mount, and network in
// netns mode), as the node's agent and jobs see the machine, with the
// cluster's SLURM_CONF, and returns its combined output.
func (e *Env) OnNode(node string, args ...string) (string, error) {
	pid, err := e.pidFile("slurmd." + node + ".pid")
	if err != nil {
		return "", err
	}
	ns := []string{"--mount=/proc/" + strconv.Itoa(pid) + "/ns/mnt"}
	mode, _ := os.ReadFile(filepath.Join(e.Dir, "run", "mode"))
	id, _ := os.ReadFile(filepath.Join(e.Dir, "run", "id"))
	if strings.TrimSpace(string(mode)) == "netns" {
		ns = append(ns, "--net=/run/netns/strata-"+strings.TrimSpace(string(id))+"-"+node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append(append(ns, "--"), args...)...)
	cmd.Env = e.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// EnsureAgent starts a node's agent if it does not run (a test's
// cleanup after it stopped one).
func (e *Env) EnsureAgent(node string) error {
	if pid, err := e.pidFile("agent." + node + ".pid"); err == nil && processAlive(pid) {
		return nil
	}
	return e.StartAgent(node)
}
