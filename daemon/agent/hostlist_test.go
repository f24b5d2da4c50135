package agent

import (
	"slices"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"n1", []string{"n1"}},
		{"n[1-3]", []string{"n1", "n2", "n3"}},
		{"n[1-2,5],gpu01", []string{"n1", "n2", "n5", "gpu01"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"r[1-2]-n[1-2]", []string{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}},
		{"a,b", []string{"a", "b"}},
	} {
		got, err := expandHostlist(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("expandHostlist(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "n[1-", "n[3-1]", "n[a-b]", "n]", "n[1-99999999]"} {
		if got, err := expandHostlist(bad); err == nil {
			t.Errorf("expandHostlist(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"n[1-3]", "a,b[01-02]", "r[1-2]-n[1-2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := expandHostlist(s)
		if err == nil && len(hosts) == 0 {
			t.Fatalf("expandHostlist(%q): no hosts and no error", s)
		}
	})
}
