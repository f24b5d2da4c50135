package mpiio

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/layout"
)

func TestLayout(t *testing.T) {
	mirror2 := layout.Scheme{Kind: layout.KindMirror, N: 2}
	tests := []struct {
		hints map[string]string
		want  layout.Policy
	}{
		{nil, layout.Policy{}},
		{map[string]string{"cb_nodes": "2", "romio_cb_write": "enable", "anything": "x,y"}, layout.Policy{}},
		{map[string]string{StripingFactor: "4", StripingUnit: "1048576"}, layout.Policy{Width: 4, Unit: 1 << 20}},
		{map[string]string{StripingUnit: "64K"}, layout.Policy{Unit: 64 << 10}},
		{map[string]string{StripingUnit: "1M "}, layout.Policy{Unit: 1 << 20}},
		{map[string]string{StripingFactor: "256", StripingUnit: "256M", StrataScheme: "none"},
			layout.Policy{Width: 256, Unit: 256 << 20, HasScheme: true}},
		{map[string]string{StrataScheme: "mirror:2", "cb_buffer_size": "16777216"}, layout.Policy{Scheme: mirror2, HasScheme: true}},
		{map[string]string{StrataScheme: "rs:4+2"}, layout.Policy{Scheme: layout.Scheme{Kind: layout.KindRS, K: 4, M: 2}, HasScheme: true}},
	}
	for _, tc := range tests {
		t.Run(Spec(tc.hints), func(t *testing.T) {
			got, err := Layout(tc.hints)
			if err != nil || got != tc.want {
				t.Fatalf("Layout(%v) = %+v, %v; want %+v", tc.hints, got, err, tc.want)
			}
		})
	}
}

func TestLayoutErrors(t *testing.T) {
	tests := []struct {
		key, value string
		want       string
	}{
		{StripingUnit, "3000", "hint striping_unit=3000: must be a multiple of 4K"},
		{StripingUnit, "1G", "hint striping_unit=1G: must be 4K to 256M"},
		{StripingUnit, "lots", "hint striping_unit=lots: must be a byte count like 1048576 or 1M"},
		{StripingUnit, "-4096", "hint striping_unit=-4096: must be a byte count"},
		{StripingUnit, "", `hint striping_unit="": must be a byte count`},
		{StripingFactor, "0", "hint striping_factor=0: must be a whole number of data servers from 1 to 256"},
		{StripingFactor, "-1", "hint striping_factor=-1: must be a whole number"},
		{StripingFactor, "257", "hint striping_factor=257: must be a whole number"},
		{StripingFactor, " 4", `hint striping_factor=" 4": must be a whole number`},
		{StripingFactor, "4,unit=1M", "hint striping_factor=4,unit=1M: must be a single value, without commas"},
		{StrataScheme, "raid6", "hint strata_scheme=raid6: must be none, mirror:N or rs:K+M"},
		{StrataScheme, "rs:0+1", "hint strata_scheme=rs:0+1: K must be 1 to 16 data units"},
		{StrataScheme, "mirror:1", "hint strata_scheme=mirror:1: mirror needs 2 to 8 copies"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			// A valid hint beside the bad one does not change the verdict.
			hints := map[string]string{tc.key: tc.value, "cb_nodes": "2"}
			if tc.key != StripingFactor {
				hints[StripingFactor] = "4"
			}
			_, err := Layout(hints)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Layout(%v) = %v, want %q", hints, err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			var he *HintError
			if !errors.As(err, &he) || he.Key != tc.key || he.Value != tc.value {
				t.Errorf("%v: want a *HintError for %s=%q", err, tc.key, tc.value)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	tests := []struct {
		hints map[string]string
		want  string
	}{
		{nil, ""},
		{map[string]string{"cb_nodes": "4"}, ""},
		{map[string]string{StripingUnit: "1048576", StripingFactor: "4"}, "width=4,unit=1048576"},
		{map[string]string{StrataScheme: "none", StripingFactor: "0"}, "width=0,scheme=none"},
		{map[string]string{StrataScheme: "rs:4+2", StripingUnit: "3000", StripingFactor: "8"}, "width=8,unit=3000,scheme=rs:4+2"},
	}
	for _, tc := range tests {
		if got := Spec(tc.hints); got != tc.want {
			t.Errorf("Spec(%v) = %q, want %q", tc.hints, got, tc.want)
		}
	}
}

func TestExplain(t *testing.T) {
	got := Explain(map[string]string{"romio_cb_write": "enable", StripingUnit: "1M", StripingFactor: "4", "cb_nodes": "2"})
	want := []Effect{
		{"cb_nodes", "2", PassedThrough},
		{"romio_cb_write", "enable", PassedThrough},
		{StripingFactor, "4", "layout width=4"},
		{StripingUnit, "1M", "layout unit=1M"},
	}
	if len(got) != len(want) {
		t.Fatalf("Explain = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Explain[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestHintsTable(t *testing.T) {
	seen := map[string]bool{}
	layoutKeys := 0
	for _, h := range Hints() {
		if seen[h.Key] {
			t.Errorf("%s is in the table twice", h.Key)
		}
		seen[h.Key] = true
		if IsLayoutHint(h.Key) != (h.Item != "") {
			t.Errorf("%s: IsLayoutHint %v but item %q", h.Key, IsLayoutHint(h.Key), h.Item)
		}
		if h.Item != "" {
			layoutKeys++
			if Spec(map[string]string{h.Key: "v"}) != h.Item+"=v" {
				t.Errorf("%s: Spec does not map it to %s", h.Key, h.Item)
			}
		}
		if !strings.HasSuffix(h.Doc, ".") {
			t.Errorf("%s: doc %q is not a sentence", h.Key, h.Doc)
		}
	}
	if layoutKeys != 3 {
		t.Errorf("%d layout hints in the table, want 3", layoutKeys)
	}
	// Every hint Recommend gives is in the table.
	for k := range Recommend(layout.Policy{Width: 4, Unit: 1 << 20, HasScheme: true}, 8) {
		if !seen[k] {
			t.Errorf("Recommend gives %s, which the table does not describe", k)
		}
	}
}

// TestJointError: a rule over several layout hints names all of them.
func TestJointError(t *testing.T) {
	hints := map[string]string{StrataScheme: "mirror:3", StripingFactor: "256", "cb_nodes": "2"}
	err := jointError(hints, fmt.Errorf("%w: width 256 with scheme mirror:3 spans 768 data servers", layout.ErrInvalid))
	want := "hint striping_factor=256: with strata_scheme=mirror:3: width 256 with scheme mirror:3 spans 768 data servers"
	if err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("jointError = %q, want %q", err, want)
	}
	// Whatever the layout grammar's joint rules are, Layout agrees with it.
	_, err = Layout(hints)
	if _, perr := layout.Parse(Spec(hints)); (err == nil) != (perr == nil) {
		t.Errorf("Layout says %v, layout.Parse(%q) says %v", err, Spec(hints), perr)
	}
}
