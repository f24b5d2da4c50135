package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestMemoryConfig: an MDS's body_memory (its budget of bodies read
// whole) and every daemon's memory_limit come from the config file; a bad
// value of either is refused with the key, the value and what is wanted,
// before the daemon creates anything.
func TestMemoryConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("body_memory = \"32M\"\nmemory_limit = \"1G\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var c rpc.ServerConfig
	var mem memoryLimit
	o := newOptions("mds")
	rpcOptions(o, &c, false)
	memoryLimitOption(o, &mem)
	f := newFlags("mds", "", "")
	o.register(f)
	a := &app{getenv: func(string) string { return "" }}
	if _, err := f.parse(a, []string{"--config", good}); err != nil {
		t.Fatal(err)
	}
	if err := o.apply(a); err != nil {
		t.Fatal(err)
	}
	if c.BufferedBodyMemory != 32<<20 || mem != (memoryLimit{bytes: 1 << 30}) {
		t.Errorf("MDS body_memory %d, memory_limit %+v; want 32M and 1G", c.BufferedBodyMemory, mem)
	}

	for _, tc := range []struct{ cmd, content, want string }{
		{"mds", "memory_limit = \"lots\"\n", `memory_limit: "lots" is not "auto", "off" or a size of at least 64M`},
		{"mds", "memory_limit = \"1M\"\n", `memory_limit: "1M" is not "auto", "off" or a size of at least 64M`},
		{"mds", "body_memory = \"512K\"\n", `body_memory: "512K" is not a size of at least 1M`},
		{"mds", "body_memory = \"-1\"\n", `body_memory: "-1" is not a size of at least 1M`},
		{"ds", "memory_limit = \"12x\"\n", `memory_limit: "12x" is not "auto", "off" or a size of at least 64M`},
		{"dev", "memory_limit = \"0\"\n", `memory_limit: "0" is not "auto", "off" or a size of at least 64M`},
	} {
		bad := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(bad, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(dir, "data")
		r := strata(t, nil, tc.cmd, "--config", bad, "--dir", data)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("strata %s with %q: exit %d, stderr %q; want an error with %q", tc.cmd, tc.content, r.code, r.stderr, tc.want)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("strata %s with %q created %s (stat: %v)", tc.cmd, tc.content, data, err)
		}
	}
}
