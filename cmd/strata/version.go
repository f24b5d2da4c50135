package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// version and commit are set by the linker from git (contrib/version.sh,
// `make build` and `make deb`): -X main.version=... -X main.commit=....
// A plain `go build` leaves "dev" and takes the commit from the build
// information Go records.
var (
	version = "dev"
	commit  = ""
)

// versionSymbol is the name of the string constant the SPANK plugin and
// the MPI-IO shim carry with their version (spank/version.c,
// mpiio/shim/version.c), built with the same contrib/version.sh.
const versionSymbol = "strata_version"

// component is a C library built and shipped with the strata binary.
type component struct {
	name  string   // as the version command prints it
	paths []string // where it is looked for, in order
}

// components returns the C libraries `strata version` checks and where it
// looks for them: where the Debian package installs them (docs/install.md),
// then beside the running binary (bin/ of a source tree), then under
// /usr/local (docs/mpiio.md's manual install).
func components() []component {
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	var exeDir string
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	shim := []string{filepath.Join("/usr/lib", triplet, "strata", "libstrata_mpiio.so")}
	plugin := []string{filepath.Join("/usr/lib", triplet, "slurm-wlm", "spank_strata.so")}
	if exeDir != "" {
		shim = append(shim, filepath.Join(exeDir, "libstrata_mpiio.so"))
		plugin = append(plugin, filepath.Join(exeDir, "spank_strata.so"), filepath.Join(exeDir, "..", "spank", "spank_strata.so"))
	}
	shim = append(shim, "/usr/local/lib/libstrata_mpiio.so")
	return []component{{"mpi-io shim", shim}, {"spank plugin", plugin}}
}

// buildCommit returns the commit this binary was built from, "" if unknown.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += " (modified)"
	}
	return rev
}

func runVersion(_ context.Context, a *app, args []string) error {
	f := newFlags("version", "", `
Print this binary's version, the commit it was built from and its Go
version, and whether the MPI-IO shim (libstrata_mpiio.so) and the SPANK
plugin (spank_strata.so) of the same version are installed. 'strata
--version' prints the same. --short prints the version alone.`)
	short := f.Bool("short", false, "print the version alone")
	pos, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(pos, 0, 0); err != nil {
		return err
	}
	if *short {
		fmt.Fprintln(a.stdout, version)
		return nil
	}
	printVersion(a.stdout, components())
	return nil
}

// printVersion writes the version report with the state of comps.
func printVersion(w io.Writer, comps []component) {
	c := buildCommit()
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(w, "strata %s\n", version)
	fmt.Fprintf(w, "  %-13s %s\n", "commit:", c)
	fmt.Fprintf(w, "  %-13s %s %s/%s\n", "go:", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, comp := range comps {
		fmt.Fprintf(w, "  %-13s %s\n", comp.name+":", componentState(comp))
	}
}

// componentState says whether comp is installed, where, and whether its
// version is this binary's.
func componentState(comp component) string {
	for _, p := range comp.paths {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		p = filepath.Clean(p)
		v, err := libraryVersion(p)
		switch {
		case err != nil:
			return fmt.Sprintf("%s, version unknown (%v)", p, err)
		case v == version:
			return fmt.Sprintf("%s, same version", p)
		default:
			return fmt.Sprintf("%s, version %s: NOT this binary's (%s)", p, v, version)
		}
	}
	return "not installed (looked for " + strings.Join(comp.paths, ", ") + ")"
}

// errNoVersion is a library without the strata_version symbol: built
// before libraries carried their version, or not Strata's.
var errNoVersion = errors.New("no " + versionSymbol + " symbol")

// libraryVersion reads the string constant strata_version of the shared
// library at path, without loading it.
func libraryVersion(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return "", err
	}
	for _, s := range syms {
		if s.Name != versionSymbol || int(s.Section) >= len(f.Sections) || s.Size == 0 || s.Size > 256 {
			continue
		}
		sec := f.Sections[s.Section]
		b := make([]byte, s.Size)
		if _, err := sec.ReadAt(b, int64(s.Value-sec.Addr)); err != nil {
			return "", fmt.Errorf("read %s: %w", versionSymbol, err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", errNoVersion
}
