package layout

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // canonical String(); "" with wantErr set means error
		err  string // substring of the error naming the offending item
	}{
		{"width=4,unit=1M,scheme=none", "width=4,unit=1M,scheme=none", ""},
		{" width=2 ", "width=2", ""},
		{"unit=64K", "unit=64K", ""},
		{"stripe_count=8,stripe_size=4MiB", "width=8,unit=4M", ""},
		{"scheme=rs:4+2", "scheme=rs:4+2", ""},
		{"scheme=mirror:3", "scheme=mirror:3", ""},
		{"", "", ""},
		{"width=0", "", `"width=0"`},
		{"width=four", "", `"width=four"`},
		{"width=300", "", "1 to 256"},
		{"unit=3K", "", "unit 3K: must be 4K to 256M"},
		{"unit=6K", "", "multiple of 4K"},
		{"unit=1G", "", "unit 1G"},
		{"unit=lots", "", `"unit=lots"`},
		{"scheme=raid5", "", `"raid5"`},
		{"scheme=mirror:1", "", "2 to 8 copies"},
		{"scheme=rs:0+2", "", "K must be 1 to 16"},
		{"scheme=rs:20+4", "", "K must be 1 to 16"},
		{"scheme=rs:4+0", "", "M must be 1 to 8"},
		{"scheme=rs:4+9", "", "M must be 1 to 8"},
		{"scheme=mirror:9", "", "2 to 8 copies"},
		{"scheme=rs:4", "", "want rs:K+M"},
		{"width=4,scheme=rs:4+2", "width=4,scheme=rs:4+2", ""},
		{"width=8,scheme=rs:4+2", "", "width 8 does not match scheme rs:4+2: an rs:K+M layout has K data columns (set width=4 or leave width out)"},
		{"width=200,scheme=mirror:2", "", "spans 400 data servers: at most 256"},
		{"color=blue", "", `unknown key "color"`},
		{"width=4,width=2", "", "given twice"},
		{"width", "", `"width": want key=value`},
		{"width=4,,unit=1M", "", `"": want key=value`},
	} {
		p, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) error = %v, want ErrInvalid naming %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || p.String() != tc.want {
			t.Errorf("Parse(%q) = %q, %v, want %q", tc.in, p.String(), err, tc.want)
		}
	}
}

func TestInherit(t *testing.T) {
	def, _ := Parse("width=4,unit=1M,scheme=none")
	dir, _ := Parse("unit=64K")
	file, _ := Parse("width=2")
	got := file.Inherit(dir).Inherit(def)
	if got.String() != "width=2,unit=64K,scheme=none" {
		t.Fatalf("inherit = %s", got)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64K": 65536, "1M": 1 << 20, "2MiB": 2 << 20, "1g": 1 << 30, "3T": 3 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "-1", "1X", "K", "99999999999T"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
	for n, want := range map[int64]string{1 << 20: "1M", 6144: "6K", 1000: "1000", 0: "0", 3 << 30: "3G"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParse: the grammar never panics, and what it accepts formats to a
// string that parses back to the same policy.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"width=4,unit=1M,scheme=none", "scheme=rs:4+2", "unit=64K", "width=x", "scheme=mirror:2,width=3", "=", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		again, err := Parse(p.String())
		if err != nil || again != p {
			t.Fatalf("Parse(%q) = %+v; reparse of %q = %+v, %v", s, p, p.String(), again, err)
		}
	})
}

func TestResolve(t *testing.T) {
	def, _ := Parse("width=4,unit=1M,scheme=none")
	for _, tc := range []struct {
		own, dir string
		want     string
		err      string
	}{
		{"", "", "width=4,unit=1M,scheme=none", ""},
		{"scheme=rs:2+1", "", "width=2,unit=1M,scheme=rs:2+1", ""},           // default width gives way to K
		{"scheme=rs:6+2", "width=8", "width=6,unit=1M,scheme=rs:6+2", ""},    // so does a directory's
		{"", "scheme=rs:4+2,unit=64K", "width=4,unit=64K,scheme=rs:4+2", ""}, // inherited together
		{"width=2", "scheme=rs:4+2", "", "width 2 does not match scheme rs:4+2"},
		{"scheme=mirror:3", "width=2", "width=2,unit=1M,scheme=mirror:3", ""},
		{"width=8,scheme=none", "scheme=rs:4+2", "width=8,unit=1M,scheme=none", ""},
	} {
		own, err := Parse(tc.own)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := Parse(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Resolve(own, dir.Inherit(def))
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%q, %q) = %v, %v; want an error naming %q", tc.own, tc.dir, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tc.own, tc.dir, got, err, tc.want)
		}
	}
}

func TestComponents(t *testing.T) {
	for spec, want := range map[string]int{
		"":                          1,
		"width=4":                   4,
		"scheme=mirror:3":           3,
		"width=4,scheme=mirror:2":   8,
		"scheme=rs:4+2":             6,
		"width=2,scheme=rs:2+1":     3,
		"unit=1M,scheme=rs:16+8":    24,
		"width=256,scheme=none":     256,
		"width=128,scheme=mirror:2": 256,
	} {
		p, err := Parse(spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		if got := p.Components(); got != want {
			t.Errorf("%q: Components() = %d, want %d", spec, got, want)
		}
		if p.Width != 0 {
			l := Layout{Width: p.Width, Unit: 1 << 20, Scheme: p.Scheme}
			if got := l.Components(); got != want {
				t.Errorf("%q: Layout.Components() = %d, want %d", spec, got, want)
			}
		}
	}
}

// FuzzResolve: no panic; a resolved policy is valid, sets every field, has
// K data columns under rs:K+M, and keeps what own set.
func FuzzResolve(f *testing.F) {
	f.Add("scheme=rs:4+2", "width=8,unit=1M")
	f.Add("width=3", "scheme=mirror:2")
	f.Add("width=2", "scheme=rs:4+2")
	f.Add("", "")
	def, _ := Parse("width=4,unit=1M,scheme=none")
	f.Fuzz(func(t *testing.T, o, d string) {
		own, err1 := Parse(o)
		dir, err2 := Parse(d)
		if err1 != nil || err2 != nil {
			return
		}
		p, err := Resolve(own, dir.Inherit(def))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Resolve(%q, %q): %v does not wrap ErrInvalid", o, d, err)
			}
			return
		}
		if err := p.Validate(); err != nil || p.Width == 0 || p.Unit == 0 || !p.HasScheme {
			t.Fatalf("Resolve(%q, %q) = %+v (%v): incomplete or invalid", o, d, p, err)
		}
		if p.Scheme.Kind == KindRS && p.Width != p.Scheme.K {
			t.Fatalf("Resolve(%q, %q) = %+v: rs width is not K", o, d, p)
		}
		if (own.Width != 0 && own.Width != p.Width) || (own.Unit != 0 && own.Unit != p.Unit) || (own.HasScheme && own.Scheme != p.Scheme) {
			t.Fatalf("Resolve(%q, %q) = %+v: lost what own set", o, d, p)
		}
		l := Layout{Width: p.Width, Unit: p.Unit, Scheme: p.Scheme}
		if l.Components() != p.Components() || l.Components() > MaxComponents {
			t.Fatalf("Resolve(%q, %q) = %+v: %d components", o, d, p, l.Components())
		}
	})
}
