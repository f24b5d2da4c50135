package main

import (
	"strings"
	"testing"

	"github.com/strata-hpc/strata/mpiio"
)

func TestMPIIOHints(t *testing.T) {
	r := strata(t, nil, "mpiio", "hints", "--layout", "width=4,unit=1M", "--nodes", "2").ok(t)
	h, err := mpiio.ParseHintsFile(r.stdout)
	if err != nil {
		t.Fatalf("output is not a hints file: %v\n%s", err, r.stdout)
	}
	want := map[string]string{
		"striping_factor": "4", "striping_unit": "1048576", "cb_buffer_size": "16777216", "cb_nodes": "2",
		"cb_config_list": "*:1", "romio_cb_write": "enable", "romio_ds_write": "disable",
	}
	if len(h) != len(want) {
		t.Errorf("hints %v, want %v", h, want)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s=%q, want %q", k, h[k], v)
		}
	}
	// In a Slurm job the node count comes from the environment.
	r = strata(t, map[string]string{"SLURM_JOB_NUM_NODES": "3"}, "mpiio", "hints", "--layout", "width=8").ok(t)
	if h, _ := mpiio.ParseHintsFile(r.stdout); h["cb_nodes"] != "3" || h["striping_factor"] != "8" {
		t.Errorf("with SLURM_JOB_NUM_NODES=3: %v", h)
	}
}

func TestMPIIOHintsDir(t *testing.T) {
	c := newCLI(t, 4)
	c.ok("mkdir", "/run")
	c.ok("setstripe", "--layout", "width=2,unit=64K", "/run")
	h, err := mpiio.ParseHintsFile(c.ok("mpiio", "hints", "--dir", "/run", "--nodes", "4"))
	if err != nil || h["striping_factor"] != "2" || h["striping_unit"] != "65536" || h["cb_nodes"] != "2" {
		t.Errorf("hints for /run: %v, %v", h, err)
	}
	// --layout's fields win over the directory's.
	h, _ = mpiio.ParseHintsFile(c.ok("mpiio", "hints", "--dir", "strata:/run", "--layout", "unit=1M"))
	if h["striping_factor"] != "2" || h["striping_unit"] != "1048576" {
		t.Errorf("hints for /run with unit=1M: %v", h)
	}
	c.ok("touch", "/run/f")
	c.run("mpiio", "hints", "--dir", "/run/f").fails(t, 1, "mpiio hints /run/f: not a directory")
	c.run("mpiio", "hints", "--dir", "/nope").fails(t, 1, "mpiio hints /nope")
}

func TestMPIIOCheck(t *testing.T) {
	r := strata(t, nil, "mpiio", "check", "striping_factor=4", "striping_unit=1048576", "cb_nodes=2").ok(t)
	for _, want := range []string{
		"cb_nodes=2             passed to the MPI-IO layer\n",
		"striping_factor=4      layout width=4\n",
		"striping_unit=1048576  layout unit=1048576\n",
		"layout: width=4,unit=1M",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output does not have %q:\n%s", want, r.stdout)
		}
	}
	strata(t, nil, "mpiio", "check", "striping_unit=3000").fails(t, 1, "mpiio check: hint striping_unit=3000: must be a multiple of 4K")
	strata(t, nil, "mpiio", "check", "striping_factor=0").fails(t, 1, "hint striping_factor=0: must be a whole number")
}

func TestMPIIOUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mpiio"}, "mpiio: want a subcommand: hints or check"},
		{[]string{"mpiio", "frob"}, `unknown subcommand "frob"`},
		{[]string{"mpiio", "hints"}, "mpiio hints: give --layout or --dir"},
		{[]string{"mpiio", "hints", "--layout", "width=0"}, `--layout "width=0": invalid layout`},
		{[]string{"mpiio", "hints", "--layout", "width=4", "--nodes", "0"}, `--nodes "0": want a number of nodes`},
		{[]string{"mpiio", "hints", "--layout", "width=4", "extra"}, "mpiio hints: takes no arguments"},
		{[]string{"mpiio", "check"}, "mpiio check: missing arguments"},
		{[]string{"mpiio", "check", "cb_nodes"}, `"cb_nodes": want KEY=VALUE`},
	} {
		strata(t, nil, tc.args...).fails(t, 2, tc.want)
	}
	for _, args := range [][]string{{"mpiio", "hints", "--help"}, {"mpiio", "check", "--help"}, {"help", "mpiio"}} {
		if r := strata(t, nil, args...); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: strata mpiio") {
			t.Errorf("%v: exit %d, %q", args, r.code, r.stdout)
		}
	}
}
