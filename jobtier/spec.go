package jobtier

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/strata-hpc/strata/layout"
)

// Limits of the grammar.
const (
	MaxSpecLen  = 8 << 10 // longest spec, in bytes
	MaxStageIns = 64      // most stage-in items
	MaxDrains   = 64      // most drain items
)

// Spec is a parsed --storage-tier value: what the job asks of its tier.
// The zero value of each field means "the default" (see
// docs/storage-tier.md). Parse builds one; String formats it canonically.
type Spec struct {
	// Capacity is the tier's size in bytes: per node, or for the whole
	// job when CapacityTotal is set. 0: the agent's default.
	Capacity      int64
	CapacityTotal bool
	// Redundancy is the tier's redundancy scheme. Only none is accepted
	// for now.
	Redundancy layout.Scheme
	// Unit is the stripe unit in bytes; 0: the cluster's default.
	Unit int64
	// Mount overrides where the tier is mounted on every node: absolute,
	// clean, possibly with %j for the job id. "": Options.DefaultMount.
	Mount string
	// Bandwidth is the drain bandwidth the job asks for, in bytes per
	// second (bw=); Slurm sees it as strata_bw licenses (Licenses). 0:
	// none asked.
	Bandwidth int64
	// QoS is the class the job asks the data servers to schedule its
	// traffic in (qos=), one of JobClasses; "": each kind of traffic in
	// its own class.
	QoS string
	// StageIn is copied into the tier before the job starts, in order.
	StageIn []StageIn
	// Drain rules copy files from the tier out while the job runs and at
	// its end. A file is drained by the first rule whose glob matches it.
	Drain []Drain
}

// StageIn is one stage-in=SRC:DST item: copy Src (a file or a directory
// tree) to Dst in the tier.
type StageIn struct {
	Src Location
	Dst string // tier-relative, clean, without a leading slash; "." is the tier's root
}

// Location is a path outside the tier: in the global Strata namespace
// (written strata:/PATH) or on the node's POSIX file system (/PATH).
type Location struct {
	Strata bool   // in the global Strata namespace
	Path   string // absolute and clean
}

// String formats l as the grammar writes it: strata:/PATH or /PATH.
func (l Location) String() string {
	if l.Strata {
		return strataPrefix + l.Path
	}
	return l.Path
}

const strataPrefix = "strata:"

// keys lists the grammar's keys in canonical order, for messages.
const keyList = "capacity, redundancy, unit, mount, bw, qos, stage-in or drain"

// Parse parses a --storage-tier value: comma-separated KEY=VALUE items
//
//	capacity=SIZE[/node|/total]   tier size per node (default) or for the whole job
//	redundancy=none|mirror:N|rs:K+M  only none for now
//	unit=SIZE                     stripe unit
//	mount=PATH                    mount path override (Options decide where)
//	bw=RATE[/s]                   drain bandwidth the job asks for, e.g. 2G (bytes per second)
//	qos=io|stage|drain            the QoS class of the job's traffic
//	stage-in=SRC:DST              repeatable; SRC strata:/PATH or /PATH, DST a tier path
//	drain=GLOB:DEST               repeatable; GLOB under the tier, DEST strata:/PATH or /PATH
//
// Every error is a *SpecError naming the offending item. Parse checks the
// grammar only; Options.Check applies the cluster's rules (mount=).
func Parse(spec string) (Spec, error) {
	var s Spec
	if len(spec) > MaxSpecLen {
		return Spec{}, &SpecError{Msg: fmt.Sprintf("spec is %d bytes long, more than the %d allowed", len(spec), MaxSpecLen)}
	}
	if strings.TrimSpace(spec) == "" {
		return Spec{}, &SpecError{Msg: "empty spec: want comma-separated items such as capacity=200G,drain=ckpt/*:strata:/proj/run1"}
	}
	if !utf8.ValidString(spec) {
		return Spec{}, &SpecError{Msg: "spec is not valid UTF-8"}
	}
	seen := map[string]bool{}
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Spec{}, &SpecError{Msg: fmt.Sprintf("item %d is empty: remove the extra comma", i+1)}
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			return Spec{}, itemErr(item, "want KEY=VALUE with KEY one of "+keyList)
		}
		switch key {
		case "stage-in", "drain":
			if seen[item] {
				return Spec{}, itemErr(item, "given twice")
			}
		case "capacity", "redundancy", "unit", "mount", "bw", "qos":
			if seen[key] {
				return Spec{}, itemErr(item, key+" given twice")
			}
		default:
			return Spec{}, itemErr(item, unknownKey(key))
		}
		if val == "" {
			return Spec{}, itemErr(item, key+" needs a value after =")
		}
		seen[key], seen[item] = true, true
		if err := s.parseItem(item, key, val); err != nil {
			return Spec{}, err
		}
	}
	if err := s.checkStageInTargets(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// parseItem sets the field of one KEY=VALUE item.
func (s *Spec) parseItem(item, key, val string) error {
	switch key {
	case "capacity":
		return s.parseCapacity(item, val)
	case "redundancy":
		sc, err := layout.ParseScheme(val)
		if err != nil {
			return itemErr(item, "redundancy must be none, mirror:N or rs:K+M ("+layoutReason(err)+")")
		}
		if sc.Kind != layout.KindNone {
			return itemErr(item, "only redundancy=none is available for now; "+sc.String()+" comes with redundancy support for job tiers")
		}
		s.Redundancy = sc
	case "unit":
		n, err := layout.ParseSize(val)
		if err != nil {
			return itemErr(item, "unit must be a size like 1M ("+err.Error()+")")
		}
		if err := (layout.Policy{Unit: n}).Validate(); err != nil || n == 0 {
			return itemErr(item, fmt.Sprintf("unit must be a multiple of %s from %s to %s",
				layout.FormatSize(layout.MinUnit), layout.FormatSize(layout.MinUnit), layout.FormatSize(layout.MaxUnit)))
		}
		s.Unit = n
	case "mount":
		p, err := mountPath(val)
		if err != nil {
			return itemErr(item, err.Error())
		}
		s.Mount = p
	case "bw":
		n, err := parseBandwidth(item, val)
		if err != nil {
			return err
		}
		s.Bandwidth = n
	case "qos":
		c, err := parseClass(item, val)
		if err != nil {
			return err
		}
		s.QoS = c
	case "stage-in":
		if len(s.StageIn) == MaxStageIns {
			return itemErr(item, fmt.Sprintf("more than %d stage-in items", MaxStageIns))
		}
		in, err := parseStageIn(val)
		if err != nil {
			return itemErr(item, err.Error())
		}
		s.StageIn = append(s.StageIn, in)
	case "drain":
		if len(s.Drain) == MaxDrains {
			return itemErr(item, fmt.Sprintf("more than %d drain items", MaxDrains))
		}
		d, err := parseDrain(val)
		if err != nil {
			return itemErr(item, err.Error())
		}
		for _, o := range s.Drain {
			if o.Glob == d.Glob {
				return itemErr(item, "a drain rule for "+d.Glob+" is already given")
			}
		}
		s.Drain = append(s.Drain, d)
	}
	return nil
}

func (s *Spec) parseCapacity(item, val string) error {
	size, per, _ := strings.Cut(val, "/")
	switch per {
	case "", "node":
	case "total":
		s.CapacityTotal = true
	default:
		return itemErr(item, "capacity must be a size like 200G, per node, or 200G/node or 1T/total")
	}
	n, err := layout.ParseSize(size)
	if err != nil {
		return itemErr(item, "capacity must be a size like 200G")
	}
	if n == 0 {
		return itemErr(item, "capacity must be more than 0")
	}
	s.Capacity = n
	return nil
}

// checkStageInTargets refuses two stage-ins into the same place, or one
// inside another: which copy wins would depend on timing.
func (s *Spec) checkStageInTargets() error {
	for i, a := range s.StageIn {
		for _, b := range s.StageIn[:i] {
			if within(a.Dst, b.Dst) || within(b.Dst, a.Dst) {
				return itemErr("stage-in="+a.String(), fmt.Sprintf("destination %s overlaps stage-in=%s: give each stage-in its own directory in the tier", tierPathString(a.Dst), b.String()))
			}
		}
	}
	return nil
}

// within reports whether the tier-relative path p is dir or below it.
func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// NodeCapacity is the capacity each of nodes nodes contributes (rounded
// up for a total capacity); 0 when the spec leaves it to the agent.
func (s Spec) NodeCapacity(nodes int) int64 {
	if !s.CapacityTotal || nodes <= 1 {
		return s.Capacity
	}
	return (s.Capacity + int64(nodes) - 1) / int64(nodes)
}

// String formats the spec canonically: items in the order capacity,
// redundancy, unit, mount, bw, qos, stage-in, drain; defaults left out; sizes with
// the largest exact suffix; paths clean. A spec with nothing but defaults
// formats as "redundancy=none". Parse(s.String()) returns s.
func (s Spec) String() string {
	var items []string
	if s.Capacity != 0 {
		c := "capacity=" + layout.FormatSize(s.Capacity)
		if s.CapacityTotal {
			c += "/total"
		}
		items = append(items, c)
	}
	if s.Redundancy.Kind != layout.KindNone {
		items = append(items, "redundancy="+s.Redundancy.String())
	}
	if s.Unit != 0 {
		items = append(items, "unit="+layout.FormatSize(s.Unit))
	}
	if s.Mount != "" {
		items = append(items, "mount="+s.Mount)
	}
	if s.Bandwidth != 0 {
		items = append(items, "bw="+layout.FormatSize(s.Bandwidth))
	}
	if s.QoS != "" {
		items = append(items, "qos="+s.QoS)
	}
	for _, in := range s.StageIn {
		items = append(items, "stage-in="+in.String())
	}
	for _, d := range s.Drain {
		items = append(items, "drain="+d.String())
	}
	if len(items) == 0 {
		return "redundancy=none"
	}
	return strings.Join(items, ",")
}

// String formats the item's value, SRC:DST.
func (in StageIn) String() string { return in.Src.String() + ":" + tierPathString(in.Dst) }

// layoutReason is a layout error without its package prefix.
func layoutReason(err error) string {
	return strings.TrimPrefix(err.Error(), layout.ErrInvalid.Error()+": ")
}

// unknownKey says that key is not in the grammar, suggesting the key it
// is closest to.
func unknownKey(key string) string {
	best, bestD := "", 3
	for _, k := range []string{"capacity", "redundancy", "unit", "mount", "bw", "qos", "stage-in", "drain", "total-capacity", "bandwidth", "rate"} {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	msg := fmt.Sprintf("unknown key %q (want %s)", key, keyList)
	switch best {
	case "":
	case "total-capacity":
		msg += "; a total capacity is written capacity=SIZE/total"
	case "bandwidth", "rate":
		msg += "; a drain bandwidth is written bw=RATE, e.g. bw=2G"
	default:
		msg += "; did you mean " + best + "?"
	}
	return msg
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	if len(a) > 32 || len(b) > 32 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
