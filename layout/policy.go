package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits on a layout's geometry.
const (
	MinUnit  = 4 << 10   // smallest stripe unit
	MaxUnit  = 256 << 20 // largest stripe unit
	MaxWidth = 256       // most data columns

	// MaxComponents is the most data servers one layout spans (data
	// columns times copies, or K+M).
	MaxComponents = 256
)

// Policy is what a user sets on a directory or an empty file: any subset of
// width, unit and scheme. A zero field means "inherit" (from the parent
// directory, then the cluster default).
type Policy struct {
	Width     int    // data columns; 0 inherits
	Unit      int64  // stripe unit in bytes; 0 inherits
	Scheme    Scheme // redundancy
	HasScheme bool   // Scheme was set explicitly
}

// IsZero reports whether the policy sets nothing.
func (p Policy) IsZero() bool { return p.Width == 0 && p.Unit == 0 && !p.HasScheme }

// Inherit fills the fields p leaves unset from parent.
func (p Policy) Inherit(parent Policy) Policy {
	if p.Width == 0 {
		p.Width = parent.Width
	}
	if p.Unit == 0 {
		p.Unit = parent.Unit
	}
	if !p.HasScheme && parent.HasScheme {
		p.Scheme, p.HasScheme = parent.Scheme, true
	}
	return p
}

// String formats the fields that are set, in grammar order, e.g.
// "width=4,unit=1M,scheme=none". The empty policy formats as "".
func (p Policy) String() string {
	var parts []string
	if p.Width != 0 {
		parts = append(parts, "width="+strconv.Itoa(p.Width))
	}
	if p.Unit != 0 {
		parts = append(parts, "unit="+FormatSize(p.Unit))
	}
	if p.HasScheme {
		parts = append(parts, "scheme="+p.Scheme.String())
	}
	return strings.Join(parts, ",")
}

// Validate checks the fields that are set against the limits.
func (p Policy) Validate() error {
	if p.Width != 0 && (p.Width < 1 || p.Width > MaxWidth) {
		return fmt.Errorf("%w: width %d: must be 1 to %d", ErrInvalid, p.Width, MaxWidth)
	}
	if p.Unit != 0 {
		if p.Unit < MinUnit || p.Unit > MaxUnit {
			return fmt.Errorf("%w: unit %s: must be %s to %s", ErrInvalid, FormatSize(p.Unit), FormatSize(MinUnit), FormatSize(MaxUnit))
		}
		if p.Unit%MinUnit != 0 {
			return fmt.Errorf("%w: unit %s: must be a multiple of %s", ErrInvalid, FormatSize(p.Unit), FormatSize(MinUnit))
		}
	}
	if p.HasScheme && p.Scheme.Kind == KindRS && p.Width != 0 && p.Width != p.Scheme.K {
		return fmt.Errorf("%w: width %d does not match scheme %s: an rs:K+M layout has K data columns (set width=%d or leave width out)", ErrInvalid, p.Width, p.Scheme, p.Scheme.K)
	}
	if n := p.Components(); n > MaxComponents {
		return fmt.Errorf("%w: width %d with scheme %s spans %d data servers: at most %d", ErrInvalid, p.Width, p.Scheme, n, MaxComponents)
	}
	return nil
}

// Components is how many data servers, on distinct nodes, a layout of p
// needs. An unset width counts as the least it can be: 1, or K for rs:K+M.
func (p Policy) Components() int {
	w := max(p.Width, 1)
	if p.Scheme.Kind == KindRS {
		w = p.Scheme.K
	}
	return p.Scheme.Components(w)
}

// Resolve completes own (what a request or a file sets) from inherited (a
// directory's effective policy, then the cluster default) and applies the
// scheme's width rule: an rs:K+M layout has exactly K data columns. A width
// inherited from elsewhere gives way to K; a width own sets that its
// effective rs scheme contradicts is an error. The result is validated.
func Resolve(own, inherited Policy) (Policy, error) {
	p := own.Inherit(inherited)
	if p.HasScheme && p.Scheme.Kind == KindRS && p.Width != p.Scheme.K {
		if own.Width != 0 {
			return Policy{}, fmt.Errorf("%w: width %d does not match scheme %s: an rs:K+M layout has K data columns (set width=%d or leave width out)", ErrInvalid, own.Width, p.Scheme, p.Scheme.K)
		}
		p.Width = p.Scheme.K
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Parse parses a layout string: comma-separated key=value items with keys
// width (alias count, stripe_count), unit (alias size, stripe_size; a size
// with optional K, M or G suffix, powers of 1024) and scheme. Every error
// names the offending item. The empty string parses to the empty policy.
func Parse(s string) (Policy, error) {
	var p Policy
	s = strings.TrimSpace(s)
	if s == "" {
		return p, nil
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" || v == "" {
			return Policy{}, fmt.Errorf("%w: item %q: want key=value", ErrInvalid, item)
		}
		key := canonicalKey(k)
		if seen[key] {
			return Policy{}, fmt.Errorf("%w: item %q: %s given twice", ErrInvalid, item, key)
		}
		seen[key] = true
		switch key {
		case "width":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxWidth {
				return Policy{}, fmt.Errorf("%w: item %q: width must be a number from 1 to %d", ErrInvalid, item, MaxWidth)
			}
			p.Width = n
		case "unit":
			n, err := ParseSize(v)
			if err != nil {
				return Policy{}, fmt.Errorf("%w: item %q: %v", ErrInvalid, item, err)
			}
			p.Unit = n
		case "scheme":
			sc, err := ParseScheme(v)
			if err != nil {
				return Policy{}, err
			}
			p.Scheme, p.HasScheme = sc, true
		default:
			return Policy{}, fmt.Errorf("%w: item %q: unknown key %q (want width, unit or scheme)", ErrInvalid, item, k)
		}
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

func canonicalKey(k string) string {
	switch strings.ToLower(k) {
	case "width", "count", "stripe_count", "striping_factor":
		return "width"
	case "unit", "size", "stripe_size", "striping_unit":
		return "unit"
	case "scheme", "redundancy":
		return "scheme"
	}
	return k
}
