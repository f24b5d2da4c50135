package mpiio

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/layout"
)

func TestRecommend(t *testing.T) {
	tests := []struct {
		spec  string
		nodes int
		cb    int64
		cbN   string // "" when cb_nodes is left out
	}{
		{"width=4,unit=1M", 8, 16 << 20, "4"},
		{"width=4,unit=1M", 2, 16 << 20, "2"},
		{"width=3,unit=1M", 1, 15 << 20, "1"},
		{"width=1,unit=4K", 16, 16 << 20, "1"},
		{"width=64,unit=1M", 64, 64 << 20, "64"},
		{"width=256,unit=256M", 4, 256 << 20, "4"},
		{"width=5,unit=20K", 0, 16 << 20 / (5 * 20 << 10) * (5 * 20 << 10), ""},
		{"unit=64K", 4, 16 << 20, "4"},
		{"width=8", 4, 16 << 20, "4"},
		{"", 0, 16 << 20, ""},
		{"scheme=none", 3, 16 << 20, "3"},
		{"unit=1M,scheme=rs:3+2", 8, 15 << 20, "3"},
	}
	for _, tc := range tests {
		t.Run(tc.spec+"/"+strconv.Itoa(tc.nodes), func(t *testing.T) {
			l, err := layout.Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			h := Recommend(l, tc.nodes)
			cb, err := strconv.ParseInt(h["cb_buffer_size"], 10, 64)
			if err != nil || cb != tc.cb {
				t.Errorf("cb_buffer_size %q, want %d", h["cb_buffer_size"], tc.cb)
			}
			unit := l.Unit
			if unit == 0 {
				unit = 1 << 20
			}
			if cb%unit != 0 || cb < unit {
				t.Errorf("cb_buffer_size %d is not a whole number of %d-byte units", cb, unit)
			}
			if h["cb_nodes"] != tc.cbN {
				t.Errorf("cb_nodes %q, want %q", h["cb_nodes"], tc.cbN)
			}
			for k, v := range map[string]string{"romio_cb_write": "enable", "romio_ds_write": "disable", "cb_config_list": "*:1"} {
				if h[k] != v {
					t.Errorf("%s=%q, want %q", k, h[k], v)
				}
			}
			// The layout hints say exactly what l sets.
			back, err := Layout(h)
			if err != nil || back != l {
				t.Errorf("Layout(Recommend(%s)) = %+v, %v; want %+v", tc.spec, back, err, l)
			}
		})
	}
}

func TestROMIOHintsFile(t *testing.T) {
	l, _ := layout.Parse("width=4,unit=1M")
	text := ROMIOHintsFile(l, 8)
	h, err := ParseHintsFile(text)
	if err != nil {
		t.Fatalf("ParseHintsFile: %v\n%s", err, text)
	}
	want := Recommend(l, 8)
	if len(h) != len(want) {
		t.Errorf("file has %d hints, Recommend %d:\n%s", len(h), len(want), text)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("file says %s=%q, want %q", k, h[k], v)
		}
	}
	var keyLines []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			keyLines = append(keyLines, line)
		}
	}
	wantLines := []string{
		"striping_factor 4", "striping_unit 1048576", "cb_buffer_size 16777216", "cb_nodes 4",
		"cb_config_list *:1", "romio_cb_write enable", "romio_ds_write disable",
	}
	if strings.Join(keyLines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("hint lines:\n%s\nwant:\n%s", strings.Join(keyLines, "\n"), strings.Join(wantLines, "\n"))
	}
	for _, want := range []string{
		"ROMIO_HINTS", "OMPIO", "ignores this file", "OMPI_MCA_io_ompio_bytes_per_agg=16777216",
		"OMPI_MCA_io_ompio_num_aggregators=4", "min(nodes 8, width 4) = 4", "16M = 4 whole stripes of 4 x 1M",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("hints file does not say %q:\n%s", want, text)
		}
	}
	// Every hint line has a comment above it.
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if line != "" && !strings.HasPrefix(line, "#") && (i == 0 || !strings.HasPrefix(lines[i-1], "#")) {
			t.Errorf("line %d %q has no comment", i+1, line)
		}
	}
}

func TestROMIOHintsFileUnknownNodes(t *testing.T) {
	text := ROMIOHintsFile(layout.Policy{}, 0)
	h, err := ParseHintsFile(text)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h["cb_nodes"]; ok {
		t.Errorf("cb_nodes given for an unknown node count:\n%s", text)
	}
	if _, ok := h[StripingFactor]; ok {
		t.Errorf("striping_factor given for an unset width:\n%s", text)
	}
	if strings.Contains(text, "num_aggregators") || !strings.Contains(text, "layout (the directory's)") {
		t.Errorf("header:\n%s", text)
	}
}

func TestParseHintsFile(t *testing.T) {
	h, err := ParseHintsFile("# comment\n\ncb_nodes 2\n\tromio_cb_read\tdisable \n #x y\n")
	if err == nil {
		t.Fatalf("an indented comment parsed: %v", h)
	}
	h, err = ParseHintsFile("# comment\n\ncb_nodes 2\n\tromio_cb_read\tdisable \n")
	if err != nil || len(h) != 2 || h["cb_nodes"] != "2" || h["romio_cb_read"] != "disable" {
		t.Fatalf("got %v, %v", h, err)
	}
	for _, bad := range []string{"cb_nodes\n", "cb_nodes 2 3\n", "a 1\na 2\n"} {
		if _, err := ParseHintsFile(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("ParseHintsFile(%q) = %v, want an error naming the line", bad, err)
		}
	}
}
