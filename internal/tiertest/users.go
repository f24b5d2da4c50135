package tiertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// User makes sure a local test account name exists (useradd, no home,
// no login shell, a group of its own) and returns its uid and gid. The
// account is kept: tests of every run share it.
func User(tb testing.TB, name string) (uid, gid uint32) {
	tb.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		out, err := exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "already exists") {
			tb.Fatalf("useradd %s: %v: %s", name, err, out)
		}
		if u, err = user.Lookup(name); err != nil {
			tb.Fatal(err)
		}
	}
	a, _ := strconv.ParseUint(u.Uid, 10, 32)
	b, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(a), uint32(b)
}

// AsUser runs a shell script as the local user name in node's namespaces
// (mount, and network in netns mode: where the node's jobs run), with
// the cluster's munged and the strata binary on PATH as strata, and
// returns its combined output.
func (e *Env) AsUser(node, name, script string) (string, error) {
	pid, err := e.pidFile("slurmd." + node + ".pid")
	if err != nil {
		return "", err
	}
	args := []string{"--mount=/proc/" + strconv.Itoa(pid) + "/ns/mnt"}
	mode, _ := os.ReadFile(filepath.Join(e.Dir, "run", "mode"))
	id, _ := os.ReadFile(filepath.Join(e.Dir, "run", "id"))
	if strings.TrimSpace(string(mode)) == "netns" {
		args = append(args, "--net=/run/netns/strata-"+strings.TrimSpace(string(id))+"-"+node)
	}
	args = append(args, "setpriv", "--reuid="+name, "--regid="+name, "--clear-groups", "--", "sh", "-c", script)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=" + filepath.Dir(e.Cluster.Strata) + ":/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C",
		"STRATA_MUNGE_SOCKET=" + filepath.Join(e.Dir, "munge", "munge.socket"), "STRATA=" + e.Cluster.Strata}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("as %s on %s: %w", name, node, err)
	}
	return string(out), nil
}
