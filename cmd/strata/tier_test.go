package main

import (
	"strings"
	"testing"
)

func TestTierValidate(t *testing.T) {
	r := strata(t, nil, "tier", "validate", "capacity=200G,stage-in=/global/ds/imagenet:/in,drain=ckpt/*:/global/proj/run42").ok(t)
	if r.stdout != "" {
		t.Errorf("valid spec without -v printed %q", r.stdout)
	}
	r = strata(t, nil, "tier", "validate", "-v", "unit=1024K, capacity=1T/total").ok(t)
	if r.stdout != "capacity=1T/total,unit=1M\n" {
		t.Errorf("-v printed %q", r.stdout)
	}
	r = strata(t, nil, "tier", "validate", "--allowed-mount-prefix", "/scratch", "--", "mount=/scratch/%j").ok(t)

	// An invalid spec: exactly the grammar's line, nothing else, exit 1.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capacity=lots"}, `storage-tier: item "capacity=lots": capacity must be a size like 200G`},
		{[]string{"mount=/scratch/x"}, `storage-tier: item "mount=/scratch/x": this cluster allows no mount path override; the tier is mounted at /mnt/strata-tier/%j (%j is the job id)`},
		{[]string{"--allowed-mount-prefix=/scratch", "mount=/home/x"}, `storage-tier: item "mount=/home/x": mount must be a path below /scratch (the administrator's allowed prefix)`},
	} {
		r := strata(t, nil, append([]string{"tier", "validate"}, tc.args...)...)
		if r.code != 1 || r.stdout != "" || r.stderr != tc.want+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}

	strata(t, nil, "tier", "validate").fails(t, 2, "tier validate: missing arguments: want SPEC")
	strata(t, nil, "tier", "validate", "a", "b").fails(t, 2, "tier validate: too many arguments")
	strata(t, nil, "tier", "validate", "--allowed-mount-prefix", "rel", "capacity=1G").fails(t, 2, "--allowed-mount-prefix")
	strata(t, nil, "tier").fails(t, 2, "tier: want a subcommand: validate")
	strata(t, nil, "tier", "mount").fails(t, 2, `unknown subcommand "mount"`)
	if r := strata(t, nil, "tier", "validate", "--help"); r.code != 0 || !strings.Contains(r.stdout, "--storage-tier") {
		t.Errorf("tier validate --help: exit %d, %q", r.code, r.stdout)
	}
}

// TestTierValidateDefaultMount: a refused mount= names where this cluster
// mounts tiers (the plugin's default_mount=), not the built-in default.
func TestTierValidateDefaultMount(t *testing.T) {
	r := strata(t, nil, "tier", "validate", "--default-mount", "/scratch/tiers/%j", "--", "mount=/x/%j")
	want := `storage-tier: item "mount=/x/%j": this cluster allows no mount path override; the tier is mounted at /scratch/tiers/%j (%j is the job id)` + "\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
	}
	strata(t, nil, "tier", "validate", "--default-mount", "rel", "capacity=1G").fails(t, 2, "--default-mount")
}
