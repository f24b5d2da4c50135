package jobtier

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/layout"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  Spec
		canon string
	}{
		{
			in: "capacity=200G,stage-in=/global/ds/imagenet:/in,drain=ckpt/*:/global/proj/run42",
			want: Spec{
				Capacity: 200 << 30,
				StageIn:  []StageIn{{Src: Location{Path: "/global/ds/imagenet"}, Dst: "in"}},
				Drain:    []Drain{{Glob: "ckpt/*", Dest: Location{Path: "/global/proj/run42"}}},
			},
			canon: "capacity=200G,stage-in=/global/ds/imagenet:/in,drain=ckpt/*:/global/proj/run42",
		},
		{
			in:    "capacity=1T/total",
			want:  Spec{Capacity: 1 << 40, CapacityTotal: true},
			canon: "capacity=1T/total",
		},
		{
			in:    "capacity=1024M/node, unit=1M ,redundancy=none",
			want:  Spec{Capacity: 1 << 30, Unit: 1 << 20},
			canon: "capacity=1G,unit=1M",
		},
		{in: "redundancy=none", want: Spec{}, canon: "redundancy=none"},
		{in: "capacity=1536MiB", want: Spec{Capacity: 1536 << 20}, canon: "capacity=1536M"},
		{
			in: "stage-in=strata:/proj/data/:in/x,stage-in=strata:/proj/b:./y,stage-in=/etc/hosts:/z/hosts",
			want: Spec{StageIn: []StageIn{
				{Src: Location{Strata: true, Path: "/proj/data"}, Dst: "in/x"},
				{Src: Location{Strata: true, Path: "/proj/b"}, Dst: "y"},
				{Src: Location{Path: "/etc/hosts"}, Dst: "z/hosts"},
			}},
			canon: "stage-in=strata:/proj/data:/in/x,stage-in=strata:/proj/b:/y,stage-in=/etc/hosts:/z/hosts",
		},
		{
			in:    "stage-in=/a:b:/",
			want:  Spec{StageIn: []StageIn{{Src: Location{Path: "/a:b"}, Dst: "."}}},
			canon: "stage-in=/a:b:/",
		},
		{
			in: "drain=/ckpt/**/*.pt:strata:/proj/run:42,drain=**:/scratch/all",
			want: Spec{Drain: []Drain{
				{Glob: "ckpt/**/*.pt", Dest: Location{Strata: true, Path: "/proj/run:42"}},
				{Glob: "**", Dest: Location{Path: "/scratch/all"}},
			}},
			canon: "drain=ckpt/**/*.pt:strata:/proj/run:42,drain=**:/scratch/all",
		},
		{in: "mount=/scratch/tiers//%j/", want: Spec{Mount: "/scratch/tiers/%j"}, canon: "mount=/scratch/tiers/%j"},
		{
			in:    "drain=a/*:/x,capacity=10G,mount=/m/t",
			want:  Spec{Capacity: 10 << 30, Mount: "/m/t", Drain: []Drain{{Glob: "a/*", Dest: Location{Path: "/x"}}}},
			canon: "capacity=10G,mount=/m/t,drain=a/*:/x",
		},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, s, tc.canon)
		}
		again, err := Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("reparse of %q = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

// TestParseErrors checks that every error is the one line a user reads
// from sbatch: it names the item and says what is expected.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"capacity=lots", `storage-tier: item "capacity=lots": capacity must be a size like 200G`},
		{"capacity=0", `storage-tier: item "capacity=0": capacity must be more than 0`},
		{"capacity=1G/job", `storage-tier: item "capacity=1G/job": capacity must be a size like 200G, per node, or 200G/node or 1T/total`},
		{"capacity=1G,capacity=2G", `storage-tier: item "capacity=2G": capacity given twice`},
		{"capacity=", `storage-tier: item "capacity=": capacity needs a value after =`},
		{"", `storage-tier: empty spec: want comma-separated items such as capacity=200G,drain=ckpt/*:strata:/proj/run1`},
		{"capacity=1G,,unit=1M", `storage-tier: item 2 is empty: remove the extra comma`},
		{"capacity=1G,", `storage-tier: item 2 is empty: remove the extra comma`},
		{"200G", `storage-tier: item "200G": want KEY=VALUE with KEY one of capacity, redundancy, unit, mount, bw, qos, stage-in or drain`},
		{"capasity=1G", `storage-tier: item "capasity=1G": unknown key "capasity" (want capacity, redundancy, unit, mount, bw, qos, stage-in or drain); did you mean capacity?`},
		{"total-capacity=1T", `storage-tier: item "total-capacity=1T": unknown key "total-capacity" (want capacity, redundancy, unit, mount, bw, qos, stage-in or drain); a total capacity is written capacity=SIZE/total`},
		{"colour=red", `storage-tier: item "colour=red": unknown key "colour" (want capacity, redundancy, unit, mount, bw, qos, stage-in or drain)`},
		{"redundancy=mirror:2", `storage-tier: item "redundancy=mirror:2": only redundancy=none is available for now; mirror:2 comes with redundancy support for job tiers`},
		{"redundancy=rs:4+2", `storage-tier: item "redundancy=rs:4+2": only redundancy=none is available for now; rs:4+2 comes with redundancy support for job tiers`},
		{"redundancy=raid6", `storage-tier: item "redundancy=raid6": redundancy must be none, mirror:N or rs:K+M (scheme "raid6": want none, mirror:N or rs:K+M)`},
		{"redundancy=rs:4+99", `storage-tier: item "redundancy=rs:4+99": redundancy must be none, mirror:N or rs:K+M (scheme "rs:4+99": M must be 1 to 8 parity units)`},
		{"unit=3K", `storage-tier: item "unit=3K": unit must be a multiple of 4K from 4K to 256M`},
		{"unit=1G", `storage-tier: item "unit=1G": unit must be a multiple of 4K from 4K to 256M`},
		{"unit=big", `storage-tier: item "unit=big": unit must be a size like 1M (size "big" is not a byte count like 4096, 64K or 1M)`},
		{"stage-in=/a", `storage-tier: item "stage-in=/a": want stage-in=SRC:DST, e.g. stage-in=strata:/proj/data:/in`},
		{"stage-in=strata:/a", `storage-tier: item "stage-in=strata:/a": want stage-in=SRC:DST, e.g. stage-in=strata:/proj/data:/in`},
		{"stage-in=/a:", `storage-tier: item "stage-in=/a:": want stage-in=SRC:DST, e.g. stage-in=strata:/proj/data:/in`},
		{"stage-in=data:/in", `storage-tier: item "stage-in=data:/in": stage-in source must be strata:/PATH (the global namespace) or an absolute /PATH`},
		{"stage-in=strata:data:/in", `storage-tier: item "stage-in=strata:data:/in": stage-in source must be strata:/PATH (the global namespace) or an absolute /PATH`},
		{"stage-in=/a/../etc:/in", `storage-tier: item "stage-in=/a/../etc:/in": stage-in source must not contain ..`},
		{"stage-in=/a:../up", `storage-tier: item "stage-in=/a:../up": stage-in destination must stay inside the tier: no ..`},
		{"stage-in=/a:/in/../../x", `storage-tier: item "stage-in=/a:/in/../../x": stage-in destination must stay inside the tier: no ..`},
		{"stage-in=/my data:/in", `storage-tier: item "stage-in=/my data:/in": stage-in source must not contain spaces, control characters or commas`},
		{"stage-in=/a:/in,stage-in=/a:/in", `storage-tier: item "stage-in=/a:/in": given twice`},
		{"stage-in=/a:/in,stage-in=/b:/in/b", `storage-tier: item "stage-in=/b:/in/b": destination /in/b overlaps stage-in=/a:/in: give each stage-in its own directory in the tier`},
		{"stage-in=/a:/,stage-in=/b:/x", `storage-tier: item "stage-in=/b:/x": destination /x overlaps stage-in=/a:/: give each stage-in its own directory in the tier`},
		{"drain=ckpt/*", `storage-tier: item "drain=ckpt/*": want drain=GLOB:DEST, e.g. drain=ckpt/*:strata:/proj/run42`},
		{"drain=ckpt/*:proj", `storage-tier: item "drain=ckpt/*:proj": drain destination must be strata:/PATH (the global namespace) or an absolute /PATH`},
		{"drain=ckpt/[:/x", `storage-tier: item "drain=ckpt/[:/x": drain glob has a malformed pattern in [ (see Go's path.Match: *, ?, [a-z], \ escapes)`},
		{"drain=ckpt/a**:/x", `storage-tier: item "drain=ckpt/a**:/x": ** must be a whole path element, like ckpt/**/*.pt`},
		{"drain=../*:/x", `storage-tier: item "drain=../*:/x": drain glob must stay inside the tier: no ..`},
		{"drain=/:/x", `storage-tier: item "drain=/:/x": drain glob must name files in the tier, like ckpt/* or **/*.h5`},
		{"drain=**/**/**/**/**:/x", `storage-tier: item "drain=**/**/**/**/**:/x": drain glob has more than 4 ** elements`},
		{"drain=a/*:/x,drain=/a/*:/y", `storage-tier: item "drain=/a/*:/y": a drain rule for a/* is already given`},
		{"mount=tier", `storage-tier: item "mount=tier": mount must be an absolute path like /mnt/strata-tier/%j`},
		{"mount=/a/%u", `storage-tier: item "mount=/a/%u": mount may contain %j (the job id) but no other % sequence`},
		{"mount=//", `storage-tier: item "mount=//": mount must not be /`},
		{"capacity=1G\x00", `storage-tier: item "capacity=1G\x00": capacity must be a size like 200G`},
		{"stage-in=/\xff:/x", `storage-tier: spec is not valid UTF-8`},
		{strings.Repeat("x", MaxSpecLen+1), `storage-tier: spec is 8193 bytes long, more than the 8192 allowed`},
	} {
		_, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want %s", tc.in, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tc.in, err, tc.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error does not wrap ErrInvalid", tc.in)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error is not one line", tc.in)
		}
	}
}

func TestParseLimits(t *testing.T) {
	var items []string
	for i := 0; i <= MaxStageIns; i++ {
		items = append(items, "stage-in=/s:/d"+strings.Repeat("x", i))
	}
	_, err := Parse(strings.Join(items, ","))
	if err == nil || !strings.Contains(err.Error(), "more than 64 stage-in items") {
		t.Errorf("65 stage-ins: %v", err)
	}
	if _, err := Parse(strings.Join(items[:MaxStageIns], ",")); err != nil {
		t.Errorf("64 stage-ins: %v", err)
	}
}

func TestNodeCapacity(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		nodes int
		want  int64
	}{
		{"capacity=100G", 4, 100 << 30},
		{"capacity=100/total", 3, 34},
		{"capacity=1T/total", 4, 256 << 30},
		{"capacity=1T/total", 1, 1 << 40},
		{"unit=1M", 4, 0},
	} {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.NodeCapacity(tc.nodes); got != tc.want {
			t.Errorf("%s on %d nodes: %d, want %d", tc.spec, tc.nodes, got, tc.want)
		}
	}
}

func TestRedundancyIsLayoutScheme(t *testing.T) {
	s, err := Parse("redundancy=none")
	if err != nil || s.Redundancy != (layout.Scheme{Kind: layout.KindNone}) {
		t.Fatalf("%+v, %v", s, err)
	}
}
