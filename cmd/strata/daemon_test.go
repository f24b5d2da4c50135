package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// daemon is a daemon command running in a goroutine of the test.
type daemon struct {
	out, err *syncBuffer
	cancel   context.CancelFunc
	done     chan error
}

func startDaemon(t *testing.T, env map[string]string, args ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{out: &syncBuffer{}, err: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	a := &app{stdin: strings.NewReader(""), stdout: d.out, stderr: d.err, getenv: func(k string) string { return env[k] }}
	go func() { d.done <- a.main(ctx, args) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop cancels the daemon as SIGTERM would and waits for it to return.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("daemon returned %v; stderr:\n%s", err, d.err.String())
		}
	case <-time.After(time.Minute):
		t.Errorf("daemon did not stop; stderr:\n%s", d.err.String())
	}
}

// waitFor polls cond until it holds, or fails the test after a minute.
func waitFor(t *testing.T, what string, d *daemon, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for !cond() {
		select {
		case err := <-d.done:
			t.Fatalf("daemon exited (%v) before %s; stderr:\n%s", err, what, d.err.String())
		case <-deadline:
			t.Fatalf("timed out waiting for %s; stdout:\n%s\nstderr:\n%s", what, d.out.String(), d.err.String())
		case <-tick.C:
		}
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestDev runs `strata dev`, uses it as the README says, stops it, and
// starts it again on the same directory: the namespace is still there.
func TestDev(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	args := []string{"dev", "--dir", dir, "--ds", "2", "--mds-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--ds-port", "0", "--log-level", "info"}
	d := startDaemon(t, nil, args...)
	waitFor(t, "dev to be up", d, func() bool { return strings.Contains(d.out.String(), "try: ") })
	out := d.out.String()
	mds := regexp.MustCompile(`(?m)^  mds    (\S+)$`).FindStringSubmatch(out)
	adminURL := regexp.MustCompile(`(?m)^  admin  (http://\S+)/v1/cluster$`).FindStringSubmatch(out)
	if mds == nil || adminURL == nil || !strings.Contains(out, "data in "+dir) ||
		!regexp.MustCompile(`(?m)^  ds2    127\.0\.0\.1:\d+$`).MatchString(out) ||
		!strings.Contains(out, "try: STRATA_MDS="+mds[1]+" strata ls /") {
		t.Fatalf("dev printed:\n%s", out)
	}
	env := map[string]string{"STRATA_MDS": mds[1], "STRATA_SECRET_FILE": filepath.Join(dir, "secret")}
	strata(t, env, "mkdir", "/kept").ok(t)
	if code, body := httpGet(t, adminURL[1]+"/v1/health"); code != 200 || !strings.Contains(body, `"role": "leader"`) {
		t.Errorf("health: %d %s", code, body)
	}
	if code, body := httpGet(t, adminURL[1]+"/v1/cluster"); code != 200 || strings.Count(body, `"state": "up"`) != 2 {
		t.Errorf("cluster: %d %s", code, body)
	}
	if code, body := httpGet(t, adminURL[1]+"/metrics"); code != 200 || !strings.Contains(body, "# TYPE") {
		t.Errorf("metrics: %d %s", code, body)
	}
	// The admin API's changes work in dev with the token it printed.
	token := regexp.MustCompile(`(?m)^  token  ([0-9a-f]{32}) `).FindStringSubmatch(out)
	if token == nil {
		t.Fatalf("dev printed no admin token:\n%s", out)
	}
	policy := `{"classes": {"io": {"weight": 7}, "drain": {"weight": 1}}}`
	if code, body := httpDo(t, http.MethodPut, adminURL[1]+"/v1/qos/policy", token[1], policy); code != http.StatusOK || !strings.Contains(body, `"weight": 7`) {
		t.Errorf("PUT /v1/qos/policy with the printed token: %d %s", code, body)
	}
	if code, _ := httpDo(t, http.MethodPut, adminURL[1]+"/v1/qos/policy", "", policy); code != http.StatusUnauthorized {
		t.Errorf("PUT /v1/qos/policy without a token: %d, want 401", code)
	}
	d.stop(t)
	if out := d.out.String(); !strings.HasSuffix(out, "strata dev: stopping\nstrata dev: stopped\n") {
		t.Errorf("dev stop printed:\n%s", out)
	}

	// Again on the same directory (and the same MDS address, which the
	// raft configuration remembers).
	args[6] = mds[1]
	d = startDaemon(t, nil, args...)
	waitFor(t, "dev to be up again", d, func() bool { return strings.Contains(d.out.String(), "try: ") })
	if out := strata(t, env, "ls", "/").ok(t).stdout; out != "kept\n" {
		t.Errorf("after restart ls / = %q", out)
	}
	if !strings.Contains(d.out.String(), "  token  "+token[1]+" ") {
		t.Errorf("the admin token changed across runs on one directory:\n%s", d.out.String())
	}
}

// freeAddr returns a loopback address with a port that was free.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := localcluster.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestMDSAndDS runs the daemons as separate commands, configured by flags,
// environment and a TOML file, and uses them with the CLI.
func TestMDSAndDS(t *testing.T) {
	dir := t.TempDir()
	mdsAddr, raftAddr, adminAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	m := startDaemon(t, map[string]string{"STRATA_HEARTBEAT_TIMEOUT": "1s"}, "mds",
		"--dir", filepath.Join(dir, "mds"), "--listen", mdsAddr, "--raft-addr", raftAddr,
		"--admin-listen", adminAddr, "--raft-timeout", "50ms", "--heartbeat-interval", "100ms", "--log-level", "warn")
	secret := filepath.Join(dir, "mds", "secret")
	waitFor(t, "the secret file", m, func() bool { _, err := os.Stat(secret); return err == nil })
	if st, err := os.Stat(secret); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("secret file: %v %v", err, st)
	}

	// ds1 from flags; ds2 from a config file and the environment.
	startDaemon(t, nil, "ds", "--id", "ds1", "--dir", filepath.Join(dir, "ds1"), "--listen", freeAddr(t),
		"--mds", mdsAddr, "--secret-file", secret, "--capacity", "1G", "--log-level", "warn")
	conf := filepath.Join(dir, "ds2.toml")
	toml := "id = \"ds2\"\ndir = \"" + filepath.Join(dir, "ds2") + "\"\nlisten = \"" + freeAddr(t) +
		"\"\nsecret_file = \"" + secret + "\"\ncapacity = \"2G\"\nlog_level = \"warn\"\nmds = \"127.0.0.1:1\"\n"
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, map[string]string{"STRATA_MDS": mdsAddr, "STRATA_NODE": "rack2"}, "ds", "--config", conf)

	cfg := client.DefaultConfig()
	cfg.MDS = mdsAddr
	sec, err := capability.ReadSecretFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = identity.NewNodeCredentials(sec, identity.RoleNode, "test", "")
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	waitFor(t, "two data servers", m, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := cl.Cluster(ctx)
		if err != nil {
			return false
		}
		up := 0
		for _, d := range r.DataSvrs {
			if d.State == "up" {
				up++
			}
		}
		return up == 2
	})

	env := map[string]string{"STRATA_MDS": mdsAddr, "STRATA_SECRET_FILE": secret}
	out := strata(t, env, "df", "--bytes").ok(t).stdout
	if !regexp.MustCompile(`(?m)^ds1\s+ds1\s+\S+\s+up\s+1073741824\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^ds2\s+rack2\s+\S+\s+up\s+2147483648\s`).MatchString(out) {
		t.Errorf("df does not show the configured data servers:\n%s", out)
	}
	src, data := randomFile(t, dir, "f.bin", 300000)
	strata(t, env, "mkdir", "/p").ok(t)
	strata(t, env, "setstripe", "--width", "2", "--unit", "64K", "/p").ok(t)
	strata(t, env, "cp", src, "/p/f.bin").ok(t)
	if got := strata(t, env, "cat", "/p/f.bin").ok(t).stdout; got != string(data) {
		t.Error("cat differs from what cp wrote")
	}
	if code, body := httpGet(t, "http://"+adminAddr+"/v1/cluster"); code != 200 || !strings.Contains(body, `"node": "rack2"`) {
		t.Errorf("admin cluster: %d %s", code, body)
	}
}
