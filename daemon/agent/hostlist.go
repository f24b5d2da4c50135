package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds what one hostlist expression may expand to.
const maxHosts = 1 << 16

// expandHostlist expands a Slurm hostlist expression ("n[1-3,5],gpu01",
// "rack[1-2]-n[01-02]") into host names, in Slurm's order, as
// `scontrol show hostnames` prints them. Zero padding of a range is kept
// ("n[01-10]" gives n01..n10).
func expandHostlist(expr string) ([]string, error) {
	var out []string
	for _, item := range splitTop(expr) {
		if item == "" {
			continue
		}
		hosts, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, hosts...)
		if len(out) > maxHosts {
			return nil, fmt.Errorf("hostlist %q: more than %d hosts", expr, maxHosts)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hostlist %q: no hosts", expr)
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// expandItem expands one comma-free (at top level) item, bracket groups
// from left to right.
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("unbalanced ] in %q", item)
		}
		return []string{item}, nil
	}
	closing := strings.IndexByte(item[open:], ']')
	if closing < 0 {
		return nil, fmt.Errorf("unbalanced [ in %q", item)
	}
	closing += open
	prefix, body, rest := item[:open], item[open+1:closing], item[closing+1:]
	tails, err := expandItem(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 32)
		b, err2 := strconv.ParseUint(hi, 10, 32)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("bad range %q", r)
		}
		if (b-a+1)*uint64(len(tails)) > maxHosts {
			return nil, fmt.Errorf("range %q is too large", r)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			num := fmt.Sprintf("%0*d", width, n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
