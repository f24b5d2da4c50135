package mpiio

import (
	"testing"

	"github.com/strata-hpc/strata/layout"
)

// FuzzLayout checks the hint grammar: no panic; hints Layout accepts give a
// policy whose String() parses back equal, and the MDS (layout.Parse)
// accepts the string the shim would set (Spec) as the same policy; hints
// Layout refuses are refused by the MDS too, or carry a comma the shim
// refuses; and Recommend of an accepted policy maps back to it.
func FuzzLayout(f *testing.F) {
	f.Add(true, "4", true, "1048576", false, "", "cb_nodes", "2", 4)
	f.Add(true, "0", true, "3000", true, "none", "", "", 0)
	f.Add(false, "", true, "64K", true, "rs:4+2", "romio_cb_write", "enable", 1)
	f.Add(true, "256", false, "", true, "mirror:3", "striping_unit", "1M", 300)
	f.Add(true, "4,unit=1M", true, " 1M ", true, "rs:0+1", "x", "", -1)
	f.Fuzz(func(t *testing.T, hasW bool, w string, hasU bool, u string, hasS bool, s string, k, v string, nodes int) {
		hints := map[string]string{}
		if k != "" {
			hints[k] = v
		}
		if hasW {
			hints[StripingFactor] = w
		}
		if hasU {
			hints[StripingUnit] = u
		}
		if hasS {
			hints[StrataScheme] = s
		}
		p, err := Layout(hints)
		mds, mdsErr := layout.Parse(Spec(hints))
		if err != nil {
			he, ok := err.(*HintError)
			if !ok || !IsLayoutHint(he.Key) || hints[he.Key] != he.Value {
				t.Fatalf("Layout(%q) = %v: not a *HintError naming a layout hint", hints, err)
			}
			if mdsErr == nil && he.Reason != "must be a single value, without commas" {
				t.Fatalf("Layout(%q) = %v, but the MDS accepts %q", hints, err, Spec(hints))
			}
			return
		}
		if mdsErr != nil || mds != p {
			t.Fatalf("Layout(%q) = %+v, but the MDS makes %+v, %v of %q", hints, p, mds, mdsErr, Spec(hints))
		}
		back, err := layout.Parse(p.String())
		if err != nil || back != p {
			t.Fatalf("%+v.String() = %q parses to %+v, %v", p, p.String(), back, err)
		}
		rec := Recommend(p, nodes)
		if again, err := Layout(rec); err != nil || again != p {
			t.Fatalf("Layout(Recommend(%+v)) = %+v, %v", p, again, err)
		}
		file, err := ParseHintsFile(ROMIOHintsFile(p, nodes))
		if err != nil || len(file) != len(rec) {
			t.Fatalf("hints file of %+v: %v, %v", p, file, err)
		}
	})
}

// FuzzParseHintsFile: no panic, and what it accepts has keys and values
// without blanks that a regenerated file would carry unchanged.
func FuzzParseHintsFile(f *testing.F) {
	f.Add("# c\ncb_nodes 2\nromio_ds_write disable\n")
	f.Add("a b c\n")
	f.Add("\t\n#\n x\ty\n")
	f.Fuzz(func(t *testing.T, text string) {
		h, err := ParseHintsFile(text)
		if err != nil {
			return
		}
		for k, v := range h {
			if k == "" || v == "" || k[0] == '#' {
				t.Fatalf("ParseHintsFile(%q) gave %q=%q", text, k, v)
			}
			var b []byte
			b = append(b, k...)
			b = append(b, ' ')
			b = append(b, v...)
			again, err := ParseHintsFile(string(b))
			if err != nil || again[k] != v {
				t.Fatalf("%q %q does not parse back: %v %v", k, v, again, err)
			}
		}
	})
}
