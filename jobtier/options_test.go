package jobtier

import (
	"errors"
	"testing"
)

func TestOptionsCheck(t *testing.T) {
	def := DefaultOptions()
	scratch := Options{AllowedMountPrefix: "/scratch/tiers/", DefaultMount: "/mnt/strata-tier/%j"}
	for _, tc := range []struct {
		opts Options
		spec string
		want string // "" for no error
	}{
		{def, "capacity=1G", ""},
		{def, "mount=/mnt/strata-tier/mine", `storage-tier: item "mount=/mnt/strata-tier/mine": this cluster allows no mount path override; the tier is mounted at /mnt/strata-tier/%j (%j is the job id)`},
		{scratch, "mount=/scratch/tiers/%j-a", ""},
		{scratch, "mount=/scratch/tiers/a/b", ""},
		{scratch, "mount=/scratch/tiers", `storage-tier: item "mount=/scratch/tiers": mount must be a path below /scratch/tiers (the administrator's allowed prefix)`},
		{scratch, "mount=/scratch/tiersX", `storage-tier: item "mount=/scratch/tiersX": mount must be a path below /scratch/tiers (the administrator's allowed prefix)`},
		{scratch, "mount=/home/me", `storage-tier: item "mount=/home/me": mount must be a path below /scratch/tiers (the administrator's allowed prefix)`},
	} {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = tc.opts.Check(s)
		if (err == nil) != (tc.want == "") || (err != nil && (err.Error() != tc.want || !errors.Is(err, ErrInvalid))) {
			t.Errorf("%+v %s:\n got %v\nwant %s", tc.opts, tc.spec, err, tc.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{DefaultOptions(), true},
		{Options{AllowedMountPrefix: "/scratch", DefaultMount: "/t/%j"}, true},
		{Options{AllowedMountPrefix: "scratch", DefaultMount: "/t/%j"}, false},
		{Options{AllowedMountPrefix: "/", DefaultMount: "/t/%j"}, false},
		{Options{AllowedMountPrefix: "/s/%j", DefaultMount: "/t/%j"}, false},
		{Options{DefaultMount: ""}, false},
	} {
		if err := tc.o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.o, err)
		}
	}
}

func TestMountPath(t *testing.T) {
	o := DefaultOptions()
	s, _ := Parse("capacity=1G")
	if got := o.MountPath(s, 42); got != "/mnt/strata-tier/42" {
		t.Errorf("default mount %q", got)
	}
	s, _ = Parse("mount=/scratch/t/%j/x")
	if got := o.MountPath(s, 7); got != "/scratch/t/7/x" {
		t.Errorf("override mount %q", got)
	}
}
