package mpiio

import (
	"fmt"
	"sort"
	"strings"

	"github.com/strata-hpc/strata/layout"
)

// The hints that set a new file's layout. striping_factor and
// striping_unit are reserved MPI-IO hints (MPI 4.0, section 14.2.8);
// strata_scheme is Strata's own. MPI requires the reserved ones to have
// the same value on every process of the open; so does the shim.
const (
	StripingFactor = "striping_factor" // layout width: data servers a file is striped over
	StripingUnit   = "striping_unit"   // layout unit: bytes per stripe unit
	StrataScheme   = "strata_scheme"   // layout scheme: none, mirror:N or rs:K+M
)

// PassedThrough is what Explain says of a hint that does not set the
// layout: Strata leaves it to the MPI-IO layer (ROMIO or OMPIO).
const PassedThrough = "passed to the MPI-IO layer"

// Hint is one entry of the hint table.
type Hint struct {
	Key string // the MPI_Info key
	// Item is the layout string key the hint sets ("width", "unit",
	// "scheme"), or "" for a hint passed to the MPI-IO layer.
	Item string
	Doc  string // what it does, one sentence
}

// Hints returns the hint table: the three hints that set a new file's
// layout, then the MPI-IO layer's hints Recommend gives values for. Any
// other key is passed to the MPI-IO layer as well.
func Hints() []Hint {
	return []Hint{
		{StripingFactor, "width", "Number of data servers a new file is striped over (1 to 256, at most the data servers the cluster has)."},
		{StripingUnit, "unit", "Stripe unit of a new file in bytes: 4K to 256M in multiples of 4K; 1048576 or 1M."},
		{StrataScheme, "scheme", "Redundancy of a new file: none, mirror:N or rs:K+M."},
		{"cb_buffer_size", "", "Bytes each aggregator gathers per round of a collective write (ROMIO and OMPIO)."},
		{"cb_nodes", "", "Number of aggregators of collective I/O (ROMIO and OMPIO)."},
		{"cb_config_list", "", "Where ROMIO places aggregators; *:1 is one per node."},
		{"romio_cb_write", "", "ROMIO collective buffering for writes: enable, disable or automatic."},
		{"romio_ds_write", "", "ROMIO data sieving for independent writes: enable, disable or automatic."},
	}
}

// layoutHints are the layout hints in the order Spec writes them.
func layoutHints() [3]struct{ key, item string } {
	return [3]struct{ key, item string }{{StripingFactor, "width"}, {StripingUnit, "unit"}, {StrataScheme, "scheme"}}
}

// IsLayoutHint reports whether key sets the layout of a new file.
func IsLayoutHint(key string) bool {
	return key == StripingFactor || key == StripingUnit || key == StrataScheme
}

// Spec returns the layout string the shim sets as a new file's
// user.strata.layout xattr for hints: "width=V,unit=V,scheme=V" with the
// values as given, for the layout hints present only, in that order. It
// validates nothing (the MDS does, and Layout gives its verdict with a
// better message); it is "" when no layout hint is present.
// mpiio/shim/strata_mpiio.c builds the same string.
func Spec(hints map[string]string) string {
	var items []string
	for _, h := range layoutHints() {
		if v, ok := hints[h.key]; ok {
			items = append(items, h.item+"="+v)
		}
	}
	return strings.Join(items, ",")
}

// Layout returns the layout policy the layout hints in hints ask for; the
// fields they leave out are zero (inherited from the directory). Other
// hints are ignored. It accepts hints exactly when the MDS accepts the
// layout string Spec makes of them, and a value with a comma never (the
// shim refuses those rather than splice them into the layout string). The
// error names the hint and its value: "hint striping_unit=3000: must be a
// multiple of 4K"; it wraps ErrInvalid.
func Layout(hints map[string]string) (layout.Policy, error) {
	var p layout.Policy
	for _, h := range layoutHints() {
		v, ok := hints[h.key]
		if !ok {
			continue
		}
		if strings.Contains(v, ",") {
			return layout.Policy{}, &HintError{Key: h.key, Value: v, Reason: "must be a single value, without commas"}
		}
		q, err := layout.Parse(h.item + "=" + v)
		if err != nil {
			return layout.Policy{}, &HintError{Key: h.key, Value: v, Reason: reason(h.key, v, err)}
		}
		switch h.item {
		case "width":
			p.Width = q.Width
		case "unit":
			p.Unit = q.Unit
		case "scheme":
			p.Scheme, p.HasScheme = q.Scheme, q.HasScheme
		}
	}
	// The rules that tie fields together (a scheme's width, the data
	// servers a layout spans), as the MDS checks them on the whole string.
	if err := p.Validate(); err != nil {
		return layout.Policy{}, jointError(hints, err)
	}
	return p, nil
}

// jointError names the layout hints that together break a rule of the
// layout grammar: the first one is the HintError's, the others follow in
// the reason ("hint striping_factor=256: with strata_scheme=mirror:3:
// width 256 with scheme mirror:3 spans 768 data servers: at most 256").
func jointError(hints map[string]string, err error) error {
	e := &HintError{}
	var with []string
	for _, h := range layoutHints() {
		v, ok := hints[h.key]
		switch {
		case !ok:
		case e.Key == "":
			e.Key, e.Value = h.key, v
		default:
			with = append(with, h.key+"="+v)
		}
	}
	e.Reason = strings.TrimPrefix(err.Error(), layout.ErrInvalid.Error()+": ")
	if len(with) > 0 {
		e.Reason = "with " + strings.Join(with, " ") + ": " + e.Reason
	}
	return e
}

// reason says in a few words why the layout grammar refused a hint's
// value (err), in the hint's terms.
func reason(key, v string, err error) string {
	switch key {
	case StripingFactor:
		return fmt.Sprintf("must be a whole number of data servers from 1 to %d", layout.MaxWidth)
	case StripingUnit:
		n, perr := layout.ParseSize(v)
		switch {
		case strings.TrimSpace(v) == "" || perr != nil:
			return "must be a byte count like 1048576 or 1M"
		case n%layout.MinUnit != 0:
			return "must be a multiple of " + layout.FormatSize(layout.MinUnit)
		default:
			return fmt.Sprintf("must be %s to %s", layout.FormatSize(layout.MinUnit), layout.FormatSize(layout.MaxUnit))
		}
	}
	// strata_scheme: the grammar's own reason, without its prefixes.
	msg := strings.TrimPrefix(err.Error(), layout.ErrInvalid.Error()+": ")
	if _, after, ok := strings.Cut(msg, fmt.Sprintf("scheme %q: ", v)); ok && !strings.HasPrefix(after, "want ") {
		return after // "K must be 1 to 16 data units"
	}
	return "must be none, mirror:N or rs:K+M"
}

// Effect is what one hint does on Strata.
type Effect struct {
	Key, Value string
	// Does is "layout width=4" (unit, scheme) for a layout hint and
	// PassedThrough for any other.
	Does string
}

// Explain returns what each hint does, sorted by key. It does not
// validate: call Layout for that.
func Explain(hints map[string]string) []Effect {
	out := make([]Effect, 0, len(hints))
	for k, v := range hints {
		e := Effect{Key: k, Value: v, Does: PassedThrough}
		for _, h := range layoutHints() {
			if h.key == k {
				e.Does = "layout " + h.item + "=" + v
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
