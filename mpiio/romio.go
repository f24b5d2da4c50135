package mpiio

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/layout"
)

// Sizes that bound the recommended cb_buffer_size.
const (
	// cbTarget is ROMIO's default cb_buffer_size: the recommendation fills
	// it with as many whole stripes (width x unit) as fit.
	cbTarget = 16 << 20
	// cbMax caps the buffer when one stripe is larger than cbTarget: each
	// aggregator allocates it, twice over with OMPIO's cycle buffers.
	cbMax = 64 << 20
	// assumedUnit stands in for a unit the policy leaves to the
	// directory: the cluster default unless an operator changed it.
	assumedUnit = 1 << 20
)

// Recommend returns the hints Strata recommends for writing files with
// layout l from nodes compute nodes (0: unknown):
//
//   - striping_factor, striping_unit and strata_scheme for the fields l
//     sets, so that Layout(Recommend(l, n)) == l;
//   - cb_buffer_size: whole stripes, about 16 MiB; see cbBufferSize;
//   - cb_nodes = min(nodes, width) (omitted when nodes is 0) and
//     cb_config_list *:1: one aggregator per node, no more aggregators
//     than data servers;
//   - romio_cb_write=enable and romio_ds_write=disable: collective writes
//     become large stripe-aligned writes, and independent writes are not
//     turned into read-modify-write under fcntl locks.
func Recommend(l layout.Policy, nodes int) map[string]string {
	h := map[string]string{
		"cb_buffer_size": strconv.FormatInt(cbBufferSize(l), 10),
		"cb_config_list": "*:1",
		"romio_cb_write": "enable",
		"romio_ds_write": "disable",
	}
	if l.Width > 0 {
		h[StripingFactor] = strconv.Itoa(l.Width)
	}
	if l.Unit > 0 {
		h[StripingUnit] = strconv.FormatInt(l.Unit, 10)
	}
	if l.HasScheme {
		h[StrataScheme] = l.Scheme.String()
	}
	if nodes > 0 {
		h["cb_nodes"] = strconv.Itoa(cbNodes(l, nodes))
	}
	return h
}

func cbNodes(l layout.Policy, nodes int) int {
	if w := dataColumns(l); w > 0 && w < nodes {
		return w
	}
	return nodes
}

// dataColumns is the number of data columns of l: its width, or K for an
// rs:K+M scheme that leaves the width out (such a layout has K columns);
// 0 if unknown.
func dataColumns(l layout.Policy) int {
	if l.Width == 0 && l.HasScheme && l.Scheme.Kind == layout.KindRS {
		return l.Scheme.K
	}
	return l.Width
}

// cbBufferSize is a multiple of the stripe unit: as many whole stripes
// (data columns x unit) as fit in 16 MiB, at least one; a stripe larger
// than that is capped at 64 MiB rounded down to whole units, at least one
// unit. An unset unit counts as 1 MiB, an unset width as "fill 16 MiB".
// Whole stripes matter most with rs:K+M, where a partial stripe costs the
// client a read-modify-write of the parity.
func cbBufferSize(l layout.Policy) int64 {
	unit := l.Unit
	if unit <= 0 {
		unit = assumedUnit
	}
	w := dataColumns(l)
	if w <= 0 {
		return max(cbTarget/unit, 1) * unit
	}
	stripe := int64(w) * unit
	if stripe <= cbTarget {
		return cbTarget / stripe * stripe
	}
	return max(min(stripe, cbMax)/unit, 1) * unit
}

// fileKeys is the order ROMIOHintsFile writes its keys in.
func fileKeys() []string {
	return []string{StripingFactor, StripingUnit, StrataScheme, "cb_buffer_size", "cb_nodes", "cb_config_list", "romio_cb_write", "romio_ds_write"}
}

// ROMIOHintsFile returns a ROMIO hints file (the file ROMIO_HINTS names)
// with Recommend(l, nodes): one "key value" line per hint, each after
// comment lines ('#' in column 0, which ROMIO skips) that say why.
func ROMIOHintsFile(l layout.Policy, nodes int) string {
	h := Recommend(l, nodes)
	var b strings.Builder
	desc := l.String()
	if desc == "" {
		desc = "(the directory's)"
	}
	fmt.Fprintf(&b, "# ROMIO hints for Strata files with layout %s", desc)
	if nodes > 0 {
		fmt.Fprintf(&b, ", written from %d nodes", nodes)
	}
	b.WriteString(", from 'strata mpiio hints'.\n")
	b.WriteString(`# Use: mpirun -x ROMIO_HINTS=/path/to/this/file ... with Open MPI's ROMIO
# (OMPI_MCA_io=romio321). ROMIO reads the file at every MPI_File_open; a hint
# the application passes in MPI_Info wins over the same hint here.
# OMPIO, Open MPI's default io component, ignores this file. Its equivalents
# are MCA parameters that apply to the whole job:
`)
	fmt.Fprintf(&b, "#   OMPI_MCA_io_ompio_bytes_per_agg=%s", h["cb_buffer_size"])
	if n, ok := h["cb_nodes"]; ok {
		fmt.Fprintf(&b, " OMPI_MCA_io_ompio_num_aggregators=%s", n)
	}
	b.WriteString("\n# Format: one \"key value\" per line.\n")
	for _, k := range fileKeys() {
		v, ok := h[k]
		if !ok {
			continue
		}
		b.WriteString("\n")
		for _, para := range explainKey(k, l, nodes, h) {
			for _, line := range strings.Split(para, "\n") {
				b.WriteString("# " + line + "\n")
			}
		}
		b.WriteString(k + " " + v + "\n")
	}
	return b.String()
}

// explainKey is the comment above key in the hints file.
func explainKey(key string, l layout.Policy, nodes int, h map[string]string) []string {
	shimOnly := "A new file gets it only if the application passes it in MPI_Info and\n" +
		"libstrata_mpiio.so is loaded; otherwise the file's directory decides."
	switch key {
	case StripingFactor:
		return []string{
			fmt.Sprintf("Layout width: a file is striped over %d data servers. ROMIO's generic driver,", l.Width),
			"which Strata mounts get, does not use it; it is here to say what the hints assume.",
			shimOnly,
		}
	case StripingUnit:
		return []string{
			fmt.Sprintf("Layout unit, %s. ROMIO aligns the file domains of collective I/O to it,", layout.FormatSize(l.Unit)),
			"so each aggregator writes whole stripe units and no unit has two writers.",
			shimOnly,
		}
	case StrataScheme:
		return []string{"Layout redundancy. Strata's own hint: ROMIO ignores it.", shimOnly}
	case "cb_buffer_size":
		cb, _ := strconv.ParseInt(h[key], 10, 64)
		unit := l.Unit
		if unit <= 0 {
			unit = assumedUnit
		}
		why := fmt.Sprintf("%d stripe units of %s", cb/unit, layout.FormatSize(unit))
		if w := int64(dataColumns(l)); w > 0 && cb%(w*unit) == 0 {
			why = fmt.Sprintf("%d whole stripes of %d x %s", cb/(w*unit), w, layout.FormatSize(unit))
		}
		return []string{
			fmt.Sprintf("Bytes an aggregator gathers per round of a collective write: %s = %s,", layout.FormatSize(cb), why),
			"a multiple of the unit so that every round ends on a unit boundary.",
		}
	case "cb_nodes":
		w := dataColumns(l)
		if w <= 0 {
			return []string{fmt.Sprintf("Aggregators: one per node (%d). With the width known, no more than it:", nodes),
				"more aggregators than data servers only queue on the same servers."}
		}
		return []string{fmt.Sprintf("Aggregators: min(nodes %d, width %d) = %s. More aggregators than data", nodes, w, h[key]),
			"servers only queue on the same servers; fewer than nodes leaves links idle."}
	case "cb_config_list":
		return []string{"At most one aggregator per node, so that aggregators use different nodes' links."}
	case "romio_cb_write":
		return []string{"Use two-phase collective buffering for every collective write: the aggregators",
			"turn the ranks' pieces into large, stripe-aligned writes."}
	case "romio_ds_write":
		return []string{"No data sieving for independent writes: it reads, patches and rewrites whole",
			"blocks under an fcntl lock, which only adds reads and lock traffic here."}
	}
	return nil
}

// ParseHintsFile parses a ROMIO hints file as ROMIO does: a line whose
// first character is '#' is a comment, blank lines are skipped, any other
// line is a key and a value separated by spaces or tabs. Where ROMIO skips
// a malformed line or a repeated key silently, or takes an indented "# x y"
// for hint "#x", ParseHintsFile returns an error naming the line.
func ParseHintsFile(text string) (map[string]string, error) {
	h := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: line %d: %q: want \"key value\"", ErrInvalid, i+1, line)
		}
		if strings.HasPrefix(f[0], "#") {
			return nil, fmt.Errorf("%w: line %d: %q: a comment starts with # in the first column; ROMIO would read this as hint %s", ErrInvalid, i+1, line, f[0])
		}
		if _, dup := h[f[0]]; dup {
			return nil, fmt.Errorf("%w: line %d: %s given twice", ErrInvalid, i+1, f[0])
		}
		h[f[0]] = f[1]
	}
	return h, nil
}
