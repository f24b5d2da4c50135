package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/layout"
)

// fuzzOptions is an option set with a key of every kind the daemons use:
// strings, durations, sizes, rates, numbers, the repair, scrub and RPC
// keys of the real commands.
func fuzzOptions() *options {
	o := newOptions("fuzz")
	var (
		s       string
		d       time.Duration
		sz      uint64
		isz, n  int
		u       uint64
		mcfg    = mds.DefaultConfig()
		dcfg    = ds.DefaultConfig()
		dataRPC = dcfg.RPC
	)
	o.str("name", "", &s)
	o.dur("timeout", "", &d)
	o.size("capacity", "", &sz)
	o.intSize("block_size", "", &isz)
	o.int("count", "", &n)
	o.uint("threshold", "", &u)
	repairOptions(o, &mcfg)
	scrubOptions(o, &dcfg)
	rpcOptions(o, &dataRPC, true)
	return o
}

// FuzzConfigFile feeds arbitrary config files to the daemons' config
// reader and every kind of key's parser: no panic, and an error names the
// file.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"name = \"x\"\ntimeout = \"5s\"\ncapacity = \"3T\"\n",
		"block_size = \"64K\"\ncount = 3\nthreshold = 9\n",
		"rebuild_rate = \"unlimited\"\nrebalance_spread = \"10%\"\nscrub_rate = \"32M\"\n",
		"body_memory = \"1G\"\nmax_conns_per_peer = 8\nidle_timeout = \"1m\"\n",
		"unknown = 1\n", "[table]\nx = 1\n", "capacity = -1\n", "timeout = 1.5\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		o := fuzzOptions()
		fl := newFlags("fuzz", "", "")
		o.register(fl)
		*o.file = path
		a := &app{getenv: func(string) string { return "" }}
		if err := o.apply(a); err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

// FuzzSize: every size the parser accepts prints back (FormatSize) to a
// string that parses to the same size; no panic on anything.
func FuzzSize(f *testing.F) {
	for _, s := range []string{"0", "64K", "1M", "3T", "1.5G", "7", "-1", "1e3", "9999999999999T", "1 KiB", "12b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := layout.ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		back := layout.FormatSize(n)
		if m, err := layout.ParseSize(back); err != nil || m != n {
			t.Fatalf("ParseSize(%q) = %d, printed %q, parsed back %d (%v)", s, n, back, m, err)
		}
	})
}
