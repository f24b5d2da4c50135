package jobtier

import "testing"

func TestDrainMatchAndTarget(t *testing.T) {
	for _, tc := range []struct {
		glob, dest, name string
		want             string // "" when the rule does not match
	}{
		{"ckpt/*", "strata:/proj/run42", "ckpt/step-100", "strata:/proj/run42/step-100"},
		{"ckpt/*", "strata:/proj/run42", "ckpt/a/b", ""},
		{"ckpt/*", "strata:/proj/run42", "other/step-1", ""},
		{"ckpt/*", "strata:/proj/run42", "ckpt", ""},
		{"ckpt/**", "/out", "ckpt/a/b/c", "/out/a/b/c"},
		{"ckpt/**", "/out", "ckpt/x", "/out/x"},
		{"**/*.h5", "/out", "a/b.h5", "/out/a/b.h5"},
		{"**/*.h5", "/out", "b.h5", "/out/b.h5"},
		{"**/*.h5", "/out", "a/b.h5x", ""},
		{"run/**/model.pt", "/o", "run/model.pt", "/o/model.pt"},
		{"run/**/model.pt", "/o", "run/s1/s2/model.pt", "/o/s1/s2/model.pt"},
		{"run/step-?/model.pt", "/o", "run/step-3/model.pt", "/o/step-3/model.pt"},
		{"final.dat", "/o", "final.dat", "/o/final.dat"},
		{"res/final.dat", "/o", "res/final.dat", "/o/final.dat"},
		{`a\*/x`, "/o", "a*/x", "/o/a*/x"},
		{"[ab]/*", "/o", "b/1", "/o/b/1"},
		{"**", "/all", "x/y", "/all/x/y"},
	} {
		s, err := Parse("drain=" + tc.glob + ":" + tc.dest)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := s.DrainTarget(tc.name)
		if ok != (tc.want != "") || (ok && got.String() != tc.want) {
			t.Errorf("drain=%s:%s, file %s: %v %v, want %q", tc.glob, tc.dest, tc.name, got, ok, tc.want)
		}
	}
}

func TestDrainFirstRuleWins(t *testing.T) {
	s, err := Parse("drain=ckpt/final-*:strata:/keep,drain=ckpt/*:/scratch/rest")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ckpt/final-1": "strata:/keep/final-1",
		"ckpt/step-1":  "/scratch/rest/step-1",
	} {
		if got, ok := s.DrainTarget(name); !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", name, got, ok, want)
		}
	}
}
