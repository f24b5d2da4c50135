package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// pkg is the part of `go list -json` output the rules need.
type pkg struct {
	ImportPath string
	Module     *struct{ Path string }
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// pureRoots are the policy packages, relative to the module.
func pureRoots() []string { return []string{"layout", "qos", "mpiio", "jobtier"} }

// forbiddenExternal are the third-party modules pure packages must not
// depend on.
func forbiddenExternal() []string {
	return []string{
		"github.com/valyala/fasthttp",
		"github.com/hashicorp/raft",
		"github.com/hanwen/go-fuse",
		"github.com/shirou/gopsutil",
	}
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"./..."}
	}
	out, err := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Stderr.Write(ee.Stderr)
		}
		fmt.Fprintf(os.Stderr, "importcheck: go list: %v\n", err)
		os.Exit(1)
	}
	pkgs, err := decode(bytes.NewReader(out))
	if err != nil {
		fmt.Fprintf(os.Stderr, "importcheck: %v\n", err)
		os.Exit(1)
	}
	problems := check(pkgs)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "importcheck: "+p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

func decode(r io.Reader) ([]pkg, error) {
	var pkgs []pkg
	dec := json.NewDecoder(r)
	for {
		var p pkg
		err := dec.Decode(&p)
		if err == io.EOF {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// check returns one line per violated rule, sorted.
func check(pkgs []pkg) []string {
	var problems []string
	for _, p := range pkgs {
		if p.Module == nil {
			continue
		}
		mod := p.Module.Path
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
		if p.Error != nil {
			problems = append(problems, fmt.Sprintf("%s: %s", rel, p.Error.Err))
			continue
		}
		if under(rel, pureRoots()...) {
			for _, d := range p.Deps {
				if bad := forbiddenForPure(mod, d); bad != "" {
					problems = append(problems, fmt.Sprintf("%s depends on %s: %s", rel, d, bad))
				}
			}
		}
		if own := daemonOf(rel); own != "" {
			for _, imp := range p.Imports {
				r, ok := strings.CutPrefix(imp, mod+"/")
				if !ok {
					continue
				}
				if other := daemonOf(r); other != "" && other != own && other != "rpc" {
					problems = append(problems, fmt.Sprintf("%s imports %s: a daemon imports no other daemon's package (only daemon/rpc)", rel, r))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// forbiddenForPure says why a pure package must not depend on dep, or "".
func forbiddenForPure(mod, dep string) string {
	if r, ok := strings.CutPrefix(dep, mod+"/"); ok {
		switch {
		case under(r, "daemon"):
			return "policy packages know nothing of daemons"
		case under(r, "client"):
			return "policy packages know nothing of the client"
		}
		return ""
	}
	for _, ext := range forbiddenExternal() {
		if dep == ext || strings.HasPrefix(dep, ext+"/") {
			return "policy packages use no HTTP, raft, FUSE or gopsutil"
		}
	}
	return ""
}

// daemonOf returns the daemon a module-relative package belongs to
// ("mds" for daemon/mds/x), or "".
func daemonOf(rel string) string {
	r, ok := strings.CutPrefix(rel, "daemon/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(r, "/")
	return name
}

// under reports whether rel is one of roots or below one.
func under(rel string, roots ...string) bool {
	for _, root := range roots {
		if rel == root || strings.HasPrefix(rel, root+"/") {
			return true
		}
	}
	return false
}
