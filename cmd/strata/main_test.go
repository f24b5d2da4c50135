package main

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/internal/capability"
)

// syncBuffer is a bytes.Buffer safe for a daemon goroutine writing while
// the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// result is what a user sees of one command: its output and exit status.
type result struct {
	stdout, stderr string
	code           int
	err            error
}

// strata runs the command line with env as the environment (nil: empty).
func strata(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	if _, ok := env["STRATA_SECRET_FILE"]; !ok {
		// No cluster to talk to: any secret, so that a root test never
		// picks up a secret file of the machine's.
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["STRATA_SECRET_FILE"] = dummySecret(t)
	}
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := a.main(ctx, args)
	return result{stdout: out.String(), stderr: errb.String(), code: exitCode(err), err: err}
}

// dummySecret returns the path of a cluster secret no test cluster has.
func dummySecret(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "dummy-secret")
	if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ok fails the test unless the command succeeded with nothing on stderr.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q (err %v)", r.code, r.stderr, r.err)
	}
	return r
}

// fails checks a failure: the exit status and one line on stderr that
// starts with "strata: " and contains want.
func (r result) fails(t *testing.T, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "strata: ") || !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q: want one line \"strata: ...%s...\"", r.stderr, want)
	}
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			r := strata(t, nil, c.name, "--help")
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: strata "+c.name) {
				t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if c.group != "daemons" && c.group != "about" && !strings.Contains(r.stdout, "-mds") {
				t.Errorf("client command without --mds:\n%s", r.stdout)
			}
		})
	}
	r := strata(t, nil, "help")
	if r.code != 0 || !strings.Contains(r.stdout, "setstripe") || !strings.Contains(r.stdout, "STRATA_MDS") {
		t.Errorf("strata help: exit %d, %q", r.code, r.stdout)
	}
	if r := strata(t, nil, "help", "cp"); r.code != 0 || !strings.Contains(r.stdout, "strata:PATH is in Strata") {
		t.Errorf("strata help cp: exit %d, %q", r.code, r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"ls", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"mv", "/a"}, "mv: missing arguments"},
		{[]string{"mv", "/a", "/b", "/c"}, "mv: too many arguments"},
		{[]string{"setstripe", "/proj"}, "nothing to set"},
		{[]string{"truncate", "/f"}, "-s SIZE is required"},
		{[]string{"truncate", "-s", "lots", "/f"}, `size "lots"`},
		{[]string{"chmod", "rwx", "/f"}, `mode "rwx"`},
		{[]string{"mds", "--raft-timeout", "soon"}, `--raft-timeout: "soon" is not a duration`},
		{[]string{"ds", "--dir", "/tmp/x"}, "--id is required"},
		{[]string{"dev", "--ds", "0"}, "want 1 to 64"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := strata(t, nil, tc.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2", r.code)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.HasPrefix(r.stderr, "strata: ") {
				t.Errorf("stderr %q, want %q", r.stderr, tc.want)
			}
			if tc.args != nil && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

func TestUnreachableMDS(t *testing.T) {
	r := strata(t, nil, "ls", "--mds", "127.0.0.1:1", "/")
	r.fails(t, 1, "cannot reach the MDS at 127.0.0.1:1")
	// STRATA_MDS is used when --mds is not given, and --mds wins over it.
	r = strata(t, map[string]string{"STRATA_MDS": "127.0.0.1:2"}, "df")
	r.fails(t, 1, "cannot reach the MDS at 127.0.0.1:2")
	r = strata(t, map[string]string{"STRATA_MDS": "127.0.0.1:2"}, "stat", "/x", "--mds", "127.0.0.1:3")
	r.fails(t, 1, "cannot reach the MDS at 127.0.0.1:3")
}

func TestClassify(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "here.bin")
	if err := os.WriteFile(local, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src, dst             string
		srcStrata, dstStrata bool
		srcPath, dstPath     string
	}{
		{local, "/proj/x", false, true, local, "/proj/x"},
		{"./missing.bin", "/proj/x", false, true, "./missing.bin", "/proj/x"},
		{"../missing.bin", "/proj/x", false, true, "../missing.bin", "/proj/x"},
		{"/proj/x", "./back.bin", true, false, "/proj/x", "./back.bin"},
		{"/proj/x", local, true, false, "/proj/x", local},
		{"/proj/a", "strata:/proj/b", true, true, "/proj/a", "/proj/b"},
		{"strata:" + local, "local:/tmp/y", true, false, local, "/tmp/y"},
		{"strata:/a", "/b", true, false, "/a", "/b"},
		{"file:/tmp/a", "/b", false, true, "/tmp/a", "/b"},
		{"local:" + local, "local:/tmp/b", false, false, local, "/tmp/b"},
	}
	for _, tc := range tests {
		s, d := classify(tc.src, tc.dst)
		if s.strata != tc.srcStrata || d.strata != tc.dstStrata || s.path != tc.srcPath || d.path != tc.dstPath {
			t.Errorf("classify(%q, %q) = %+v, %+v", tc.src, tc.dst, s, d)
		}
	}
}

func TestExpandGroups(t *testing.T) {
	f := newFlags("rm", "PATH...", "")
	r := f.Bool("r", false, "")
	fo := f.Bool("f", false, "")
	f.String("m", "", "")
	args, err := f.parse(&app{stdout: &bytes.Buffer{}}, []string{"/a", "-rf", "/b", "--", "-r"})
	if err != nil {
		t.Fatal(err)
	}
	if !*r || !*fo || strings.Join(args, " ") != "/a /b -r" {
		t.Errorf("r %v f %v args %q", *r, *fo, args)
	}
	if got := f.expandGroups([]string{"-rm", "-mx"}); strings.Join(got, " ") != "-rm -mx" {
		t.Errorf("grouped a flag with a value: %q", got)
	}
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ds.toml")
	err := os.WriteFile(file, []byte("id = \"from-file\"\nlisten = \"file:1\"\nnode = \"file-node\"\ncapacity = \"2G\"\nheartbeat_interval = \"3s\"\nblock_size = 8192\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var id, listen, node string
	var capacity uint64
	var hb time.Duration
	var bs int
	build := func() (*options, *cmdFlags) {
		id, listen, node, capacity, hb, bs = "def", "def:1", "def-node", 0, time.Second, 4096
		o := newOptions("ds")
		o.str("id", "", &id)
		o.str("listen", "", &listen)
		o.str("node", "", &node)
		o.size("capacity", "", &capacity)
		o.dur("heartbeat_interval", "", &hb)
		o.intSize("block_size", "", &bs)
		f := newFlags("ds", "", "")
		o.register(f)
		return o, f
	}
	a := &app{stdout: &bytes.Buffer{}, getenv: func(k string) string {
		return map[string]string{"STRATA_LISTEN": "env:1", "STRATA_NODE": "env-node"}[k]
	}}
	o, f := build()
	if _, err := f.parse(a, []string{"--config", file, "--node", "flag-node"}); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(a); err != nil {
		t.Fatal(err)
	}
	// flags > env > file > defaults
	if id != "from-file" || listen != "env:1" || node != "flag-node" || capacity != 2<<30 || hb != 3*time.Second || bs != 8192 {
		t.Errorf("id %q listen %q node %q capacity %d hb %v bs %d", id, listen, node, capacity, hb, bs)
	}

	// STRATA_CONFIG names the file when --config does not.
	a.getenv = func(k string) string { return map[string]string{"STRATA_CONFIG": file}[k] }
	o, f = build()
	if _, err := f.parse(a, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(a); err != nil || id != "from-file" {
		t.Errorf("STRATA_CONFIG: id %q, err %v", id, err)
	}

	bad := filepath.Join(dir, "bad.toml")
	for content, want := range map[string]string{
		"colour = \"blue\"\n":      `unknown key "colour"`,
		"heartbeat_interval = 5\n": `heartbeat_interval: "5" is not a duration`,
		"id = [1, 2]\n":            "want a string or a number",
		"id = \n":                  "bad.toml",
	} {
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		o, f = build()
		a.getenv = func(string) string { return "" }
		if _, err := f.parse(a, []string{"--config", bad}); err != nil {
			t.Fatal(err)
		}
		if err := o.apply(a); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", content, err, want)
		}
	}
	o, f = build()
	if _, err := f.parse(a, []string{"--config", filepath.Join(dir, "nope.toml")}); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 1023: "1023", 1024: "1.0K", 1536: "1.5K", 10 << 20: "10M", 64 << 20: "64M", 3 << 40: "3.0T"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
	for mode, want := range map[uint32]string{0o040755: "drwxr-xr-x", 0o100644: "-rw-r--r--", 0o120777: "lrwxrwxrwx", 0o104755: "-rwsr-xr-x", 0o041777: "drwxrwxrwt"} {
		if got := modeString(mode); got != want {
			t.Errorf("modeString(%o) = %q, want %q", mode, got, want)
		}
	}
}

func TestSecretFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secret")
	a, err := capability.LoadOrCreateSecretFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 || len(a) != 32 {
		t.Fatalf("secret file %v mode %v len %d", err, st.Mode(), len(a))
	}
	b, err := capability.LoadOrCreateSecretFile(p)
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("second load: %v, equal %v", err, bytes.Equal(a, b))
	}
	if err := os.WriteFile(p, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := capability.ReadSecretFile(p); err == nil || !strings.Contains(err.Error(), "5 bytes, want 32") {
		t.Errorf("short secret: %v", err)
	}
}
