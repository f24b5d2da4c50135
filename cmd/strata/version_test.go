package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// buildLib compiles a shared library carrying strata_version = v (none if
// v is empty) with the system's C compiler, as the Makefiles do.
func buildLib(t *testing.T, dir, name, v string) string {
	t.Helper()
	src := filepath.Join(dir, name+".c")
	code := "int strata_other = 1;\n"
	if v != "" {
		code += `__attribute__((visibility("default"))) const char strata_version[] = "` + v + "\";\n"
	}
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if b, err := exec.Command("cc", "-shared", "-fPIC", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	return out
}

func TestVersionReportsComponents(t *testing.T) {
	dir := t.TempDir()
	same := buildLib(t, dir, "same.so", version)
	older := buildLib(t, dir, "older.so", "0.0.1")
	bare := buildLib(t, dir, "bare.so", "")
	missing := filepath.Join(dir, "missing.so")
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"same", []string{missing, same}, same + ", same version"},
		{"older", []string{older, same}, older + ", version 0.0.1: NOT this binary's (" + version + ")"},
		{"no symbol", []string{bare}, bare + ", version unknown (no strata_version symbol)"},
		{"missing", []string{missing}, "not installed (looked for " + missing + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := componentState(component{"x", tc.paths}); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := strata(t, nil, args...).ok(t)
		for _, want := range []string{"strata " + version + "\n", "go:", runtime.Version(), "mpi-io shim:", "spank plugin:"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, r.stdout)
			}
		}
	}
	if r := strata(t, nil, "version", "--short").ok(t); r.stdout != version+"\n" {
		t.Errorf("version --short: %q", r.stdout)
	}
	if r := strata(t, nil, "version", "extra"); r.code != 2 {
		t.Errorf("version extra: exit %d, want 2", r.code)
	}
}
