package layout

import (
	"errors"
	"strconv"
	"strings"
)

// ParseSize parses a byte count with an optional K, M, G or T suffix
// (powers of 1024; a trailing "iB" or "B" is allowed: 1M, 1MiB, 1MB).
func ParseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "iB"), "B")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("size " + strconv.Quote(v) + " is not a byte count like 4096, 64K or 1M")
	}
	if n > (1<<62)/mult {
		return 0, errors.New("size " + strconv.Quote(v) + " is too large")
	}
	return n * mult, nil
}

// FormatSize formats n with the largest suffix that divides it exactly
// (1048576 -> "1M", 6144 -> "6K", 1000 -> "1000").
func FormatSize(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}
