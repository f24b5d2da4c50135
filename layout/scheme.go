package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is a redundancy scheme family.
type Kind uint8

// The redundancy scheme families.
const (
	KindNone Kind = iota
	KindMirror
	KindRS
)

// Limits on the redundancy schemes.
const (
	MaxMirror = 8  // most copies of a mirror
	MaxRSData = 16 // most data units of a Reed-Solomon row
	MaxRSPar  = 8  // most parity units of a Reed-Solomon row
)

// Scheme is a redundancy scheme: none, mirror:N (N copies) or rs:K+M.
//
// How a scheme spreads a layout of width W over data servers (one
// component per data server, each on its own node):
//   - none: W components, component c is data column c.
//   - mirror:N: W*N components; copy r (0 <= r < N) of data column c is
//     component r*W+c, so the first W components are laid out as none.
//   - rs:K+M: the width is K; K+M components, component c < K is data
//     column c and component K+j holds parity unit j of every stripe row.
type Scheme struct {
	Kind Kind
	N    int // copies, for KindMirror
	K    int // data units, for KindRS
	M    int // parity units, for KindRS
}

// String formats the scheme in the grammar's form ("none", "mirror:2", "rs:4+2").
func (s Scheme) String() string {
	switch s.Kind {
	case KindMirror:
		return "mirror:" + strconv.Itoa(s.N)
	case KindRS:
		return fmt.Sprintf("rs:%d+%d", s.K, s.M)
	default:
		return "none"
	}
}

// Components is how many components a layout of this scheme with width
// data columns has (see Scheme for their order).
func (s Scheme) Components(width int) int {
	switch s.Kind {
	case KindMirror:
		return width * s.N
	case KindRS:
		return s.K + s.M
	}
	return width
}

// ParseScheme parses "none", "mirror:N" or "rs:K+M" and checks its limits.
func ParseScheme(v string) (Scheme, error) {
	switch {
	case v == "none":
		return Scheme{Kind: KindNone}, nil
	case strings.HasPrefix(v, "mirror:"):
		n, err := strconv.Atoi(strings.TrimPrefix(v, "mirror:"))
		if err != nil {
			return Scheme{}, fmt.Errorf("%w: scheme %q: copies must be a number", ErrInvalid, v)
		}
		if n < 2 || n > MaxMirror {
			return Scheme{}, fmt.Errorf("%w: scheme %q: mirror needs 2 to %d copies", ErrInvalid, v, MaxMirror)
		}
		return Scheme{Kind: KindMirror, N: n}, nil
	case strings.HasPrefix(v, "rs:"):
		ks, ms, ok := strings.Cut(strings.TrimPrefix(v, "rs:"), "+")
		k, err1 := strconv.Atoi(ks)
		m, err2 := strconv.Atoi(ms)
		if !ok || err1 != nil || err2 != nil {
			return Scheme{}, fmt.Errorf("%w: scheme %q: want rs:K+M, e.g. rs:4+2", ErrInvalid, v)
		}
		if k < 1 || k > MaxRSData {
			return Scheme{}, fmt.Errorf("%w: scheme %q: K must be 1 to %d data units", ErrInvalid, v, MaxRSData)
		}
		if m < 1 || m > MaxRSPar {
			return Scheme{}, fmt.Errorf("%w: scheme %q: M must be 1 to %d parity units", ErrInvalid, v, MaxRSPar)
		}
		return Scheme{Kind: KindRS, K: k, M: m}, nil
	}
	return Scheme{}, fmt.Errorf("%w: scheme %q: want none, mirror:N or rs:K+M", ErrInvalid, v)
}
