package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// cli runs commands against one cluster.
type cli struct {
	t      *testing.T
	mds    string
	secret string // the cluster secret file: the commands run as root on a trusted node
}

func newCLI(t *testing.T, nds int) *cli {
	c := testcluster.Start(t, nds)
	return &cli{t: t, mds: c.MDSAddr(), secret: secretFile(c)}
}

// secretFile is the cluster secret file of a test cluster.
func secretFile(c *testcluster.Cluster) string { return filepath.Join(c.Dir(), "secret") }

// envOf is the environment of client commands of a test cluster.
func envOf(c *testcluster.Cluster) map[string]string {
	return map[string]string{"STRATA_MDS": c.MDSAddr(), "STRATA_SECRET_FILE": secretFile(c)}
}

func (c *cli) env() map[string]string {
	return map[string]string{"STRATA_MDS": c.mds, "STRATA_SECRET_FILE": c.secret}
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return strata(c.t, c.env(), args...)
}

func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 || r.stderr != "" {
		c.t.Fatalf("strata %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func randomFile(t *testing.T, dir, name string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rnd := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(rnd.Uint32())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestTour is the README's tour, checked the way a user reads it.
func TestTour(t *testing.T) {
	c := newCLI(t, 4)
	local := t.TempDir()
	const size = 6<<20 + 12345 // one and a half stripe rows of 4 x 1M, unaligned
	big, data := randomFile(t, local, "big.bin", size)

	c.ok("mkdir", "/proj")
	c.ok("setstripe", "--width", "4", "--unit", "1M", "/proj")
	if out := c.ok("getstripe", "/proj"); !strings.Contains(out, "policy:     width=4,unit=1M,scheme=none") {
		t.Errorf("getstripe /proj:\n%s", out)
	}
	c.ok("cp", big, "/proj/big.bin")

	out := c.ok("getstripe", "/proj/big.bin")
	if !strings.Contains(out, "layout:     width=4,unit=1M,scheme=none\n") || !strings.Contains(out, "width:      4\n") || !strings.Contains(out, "unit:       1M\n") {
		t.Errorf("getstripe layout:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^(\d+)\s+(ds\d+)\s+(127\.0\.0\.1:\d+)$`).FindAllStringSubmatch(out, -1)
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		ids[r[2]], addrs[r[3]] = true, true
	}
	if len(rows) != 4 || len(ids) != 4 || len(addrs) != 4 {
		t.Errorf("want 4 columns on 4 distinct data servers:\n%s", out)
	}

	out = c.ok("ls", "-l", "/proj")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^-rw-r--r-- +1 +\S+ +\S+ +%d .* big\.bin$`, size)).MatchString(out) {
		t.Errorf("ls -l /proj does not show big.bin with its size %d:\n%s", size, out)
	}
	if out := c.ok("ls", "/proj"); out != "big.bin\n" {
		t.Errorf("ls /proj = %q", out)
	}
	if out := c.ok("stat", "/proj/big.bin"); !strings.Contains(out, fmt.Sprintf("size:              %d (6.0M)", size)) || !strings.Contains(out, "type:              regular file") {
		t.Errorf("stat:\n%s", out)
	}

	r := c.run("cat", "/proj/big.bin").ok(t)
	if !bytes.Equal([]byte(r.stdout), data) {
		t.Errorf("cat returned %d bytes, not the %d written", len(r.stdout), len(data))
	}

	back := filepath.Join(local, "back.bin")
	c.ok("cp", "/proj/big.bin", back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Errorf("cp back: %v, equal %v", err, bytes.Equal(got, data))
	}
	// Into an existing local directory, under the source's name.
	into := filepath.Join(local, "into")
	if err := os.Mkdir(into, 0o755); err != nil {
		t.Fatal(err)
	}
	c.ok("cp", "/proj/big.bin", into)
	if got, err := os.ReadFile(filepath.Join(into, "big.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("cp into a directory: %v", err)
	}
	// Strata to Strata, into a directory.
	c.ok("mkdir", "/copy")
	c.ok("cp", "/proj/big.bin", "strata:/copy/")
	if r := c.run("cat", "strata:/copy/big.bin").ok(t); !bytes.Equal([]byte(r.stdout), data) {
		t.Error("strata to strata copy differs")
	}
	// Copying a file onto itself is refused and leaves it intact.
	c.run("cp", "/proj/big.bin", "strata:/proj/big.bin").fails(t, 1, "source and destination are the same file")
	if r := c.run("cat", "/proj/big.bin").ok(t); !bytes.Equal([]byte(r.stdout), data) {
		t.Error("cp onto itself damaged the file")
	}

	c.ok("rm", "/proj/big.bin")
	if out := c.ok("ls", "/proj"); out != "" {
		t.Errorf("ls after rm: %q", out)
	}
	c.run("stat", "/proj/big.bin").fails(t, 1, "stat /proj/big.bin: no such file or directory")
	c.ok("rm", "-r", "/copy", "/proj")
	if out := c.ok("ls", "/"); out != "" {
		t.Errorf("ls / after rm -r: %q", out)
	}
}

// TestCommands covers the smaller commands.
func TestCommands(t *testing.T) {
	c := newCLI(t, 2)
	c.ok("mkdir", "-p", "/a/b/c")
	c.ok("mkdir", "-p", "/a/b/c") // exists: no error with -p
	c.ok("touch", "/a/f", "/a/.hidden")
	if out := c.ok("ls", "/a"); out != "b\nf\n" {
		t.Errorf("ls /a = %q", out)
	}
	if out := c.ok("ls", "-a", "/a"); out != ".hidden\nb\nf\n" {
		t.Errorf("ls -a /a = %q", out)
	}
	if out := c.ok("ls", "/a/f", "/a/b"); out != "/a/f\n\n/a/b:\nc\n" {
		t.Errorf("ls of a file and a dir = %q", out)
	}
	c.ok("truncate", "-s", "10K", "/a/f")
	if out := c.ok("ls", "-l", "/a/f"); !strings.Contains(out, " 10240 ") {
		t.Errorf("ls -l after truncate: %q", out)
	}
	if r := c.run("cat", "/a/f").ok(t); r.stdout != string(make([]byte, 10240)) {
		t.Error("a grown file does not read as zeros")
	}
	c.ok("chmod", "600", "/a/f")
	if out := c.ok("stat", "/a/f"); !strings.Contains(out, "mode:              0600 (-rw-------)") {
		t.Errorf("stat after chmod:\n%s", out)
	}
	c.ok("ln", "-s", "/a/f", "/a/sym")
	if out := c.ok("readlink", "/a/sym"); out != "/a/f\n" {
		t.Errorf("readlink = %q", out)
	}
	if out := c.ok("ls", "-l", "/a"); !strings.Contains(out, "sym -> /a/f") {
		t.Errorf("ls -l shows no symlink target:\n%s", out)
	}
	c.ok("ln", "/a/f", "/a/hard")
	if out := c.ok("stat", "/a/hard"); !strings.Contains(out, "links:             2") {
		t.Errorf("stat of a hard link:\n%s", out)
	}
	c.ok("mv", "/a/f", "/a/b") // into an existing directory
	if out := c.ok("ls", "/a/b"); out != "c\nf\n" {
		t.Errorf("mv into a directory: ls = %q", out)
	}
	c.ok("mv", "/a/b/f", "/a/g")
	c.ok("touch", "/a/h")
	c.run("mv", "-n", "/a/g", "/a/h").fails(t, 1, "file exists")
	c.ok("rm", "-f", "/a/nope")
	c.run("rm", "/a/nope").fails(t, 1, "rm /a/nope: no such file or directory")
	c.run("rm", "-r", "/a/nope").fails(t, 1, "no such file or directory")
	c.run("rm", "-rf", "/").fails(t, 1, "refusing to remove the root directory")
	c.ok("rm", "-rf", "/a")
	if out := c.ok("ls", "/"); out != "" {
		t.Errorf("ls / = %q", out)
	}
	out := c.ok("df")
	if !regexp.MustCompile(`(?m)^strata\s+\S+\s+\S+\s+\S+\s+\d+%\s+\d+\s+2 up of 2$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^ds1\s+ds1\s+127\.0\.0\.1:\d+\s+up\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^ds2\s+ds2\s+127\.0\.0\.1:\d+\s+up\s`).MatchString(out) {
		t.Errorf("df:\n%s", out)
	}
	if out := c.ok("df", "--bytes"); strings.Contains(out, "G ") {
		t.Errorf("df --bytes shows suffixes:\n%s", out)
	}
}

// snapshot is the namespace as a user could see it: every path with its
// type, mode, size and layout, and every file's bytes.
func snapshot(t *testing.T, mds, secret string) string {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.MDS = mds
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lines []string
	var walk func(p string)
	walk = func(p string) {
		a, err := cl.Lstat(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s %o %d", p, a.Mode, a.Size)
		if a.IsDir() || a.IsFile() {
			info, err := cl.GetLayout(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			line += " " + info.Spec + " " + strings.Join(info.Layout.Targets, ",")
		}
		if a.IsFile() {
			f, err := cl.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if _, err := f.WriteTo(&b); err != nil {
				t.Fatal(err)
			}
			f.Close()
			line += fmt.Sprintf(" %x", b.Bytes())
		}
		lines = append(lines, line)
		if a.IsDir() {
			ents, err := cl.ReadDir(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				walk(path.Join(p, e.Name))
			}
		}
	}
	walk("/")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestBadInput: each mistake prints one line naming what is wrong, exits
// non-zero and leaves the namespace as it was.
func TestBadInput(t *testing.T) {
	c := newCLI(t, 4)
	local := t.TempDir()
	small, _ := randomFile(t, local, "small.bin", 5000)
	c.ok("mkdir", "/proj")
	c.ok("setstripe", "--width", "2", "--unit", "64K", "/proj")
	c.ok("cp", small, "/proj/small.bin")
	c.ok("mkdir", "/proj/sub")
	c.ok("touch", "/proj/empty")
	before := snapshot(t, c.mds, c.secret)

	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"setstripe", "--layout", "width=0", "/proj"}, 1, `setstripe /proj: invalid layout: item "width=0": width must be a number from 1 to 256`},
		{[]string{"setstripe", "--unit", "3K", "/proj"}, 1, "setstripe /proj: invalid layout: unit 3K: must be 4K to 256M"},
		{[]string{"setstripe", "--scheme", "raid5", "/proj"}, 1, `setstripe /proj: invalid layout: scheme "raid5": want none, mirror:N or rs:K+M`},
		{[]string{"setstripe", "--layout", "width=2,colour=red", "/proj"}, 1, `unknown key "colour"`},
		{[]string{"setstripe", "--layout", "width=2", "--width", "3", "/proj"}, 1, "width given twice"},
		{[]string{"setstripe", "--unit", "64K", "/proj/empty", "--layout", "unit=100000"}, 1, "unit given twice"},
		{[]string{"setstripe", "--width", "9", "/proj"}, 1, "setstripe /proj: invalid argument"},
		{[]string{"setstripe", "--width", "1", "/proj/small.bin"}, 1, "setstripe /proj/small.bin: file exists"},
		{[]string{"setstripe", "--width", "1", "/nope"}, 1, "setstripe /nope: no such file or directory"},
		{[]string{"cp", "--layout", "width=0", small, "/proj/new.bin"}, 1, `invalid layout: item "width=0"`},
		{[]string{"stat", "/nope"}, 1, "stat /nope: no such file or directory"},
		{[]string{"stat", "/proj/nope/deeper"}, 1, "stat /proj/nope/deeper: no such file or directory"},
		{[]string{"ls", "/nope"}, 1, "ls /nope: no such file or directory"},
		{[]string{"cat", "/nope"}, 1, "cat /nope: no such file or directory"},
		{[]string{"cat", "/proj"}, 1, "cat /proj: is a directory"},
		{[]string{"getstripe", "/nope"}, 1, "getstripe /nope: no such file or directory"},
		{[]string{"cp", "/nope", filepath.Join(local, "out.bin")}, 1, "cp /nope: no such file or directory"},
		{[]string{"cp", "./nope.bin", "/proj/x"}, 1, "cp ./nope.bin: no such file or directory"},
		{[]string{"cp", local, "/proj/dir"}, 1, "is a directory"},
		{[]string{"cp", small, "/nope/x.bin"}, 1, "cp /nope/x.bin: no such file or directory"},
		{[]string{"rm", "/nope"}, 1, "rm /nope: no such file or directory"},
		{[]string{"rm", "/proj"}, 1, "rm /proj: directory not empty"},
		{[]string{"mv", "/proj", "/proj/sub"}, 1, "mv /proj /proj/sub: invalid argument"},
		{[]string{"mv", "/proj", "/proj/sub/deeper"}, 1, "mv /proj /proj/sub/deeper: invalid argument"},
		{[]string{"mv", "/nope", "/x"}, 1, "mv /nope /x: no such file or directory"},
		{[]string{"mkdir", "/proj"}, 1, "mkdir /proj: file exists"},
		{[]string{"mkdir", "/x/y/z"}, 1, "mkdir /x/y/z: no such file or directory"},
		{[]string{"mkdir", "-p", "/proj/small.bin/x"}, 1, "not a directory"},
		{[]string{"readlink", "/proj/small.bin"}, 1, "readlink /proj/small.bin: invalid argument"},
		{[]string{"ln", "/proj", "/dirlink"}, 1, "ln /dirlink: operation not permitted"},
		{[]string{"chmod", "644", "/nope"}, 1, "chmod /nope: no such file or directory"},
		{[]string{"truncate", "-s", "1", "/proj/sub"}, 1, "truncate /proj/sub: is a directory"},
		{[]string{"setstripe", "--width", "x", "/proj"}, 1, `item "width=x"`},
		{[]string{"ls", "--mds"}, 2, "flag needs an argument: -mds"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c.run(tc.args...).fails(t, tc.code, tc.want)
			if after := snapshot(t, c.mds, c.secret); after != before {
				t.Errorf("namespace changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(local, "out.bin")); !os.IsNotExist(err) {
		t.Errorf("a failed cp left a local file: %v", err)
	}
}
