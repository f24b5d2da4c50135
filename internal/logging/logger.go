package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// ParseLevel parses a log level: debug, info, warn (or warning) or error,
// in any case.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "WARNING" {
		s = "WARN"
	}
	switch s {
	case "DEBUG", "INFO", "WARN", "ERROR":
	default:
		return 0, fmt.Errorf("log level %q: %w", s, ErrLevel)
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: %w", s, ErrLevel)
	}
	return l, nil
}

// New returns a logger writing text lines (key=value) to w at level, with
// repeated warnings and errors rate-limited (RateLimit, DefaultEvery).
func New(w io.Writer, level string) (*slog.Logger, error) {
	l, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})
	return slog.New(RateLimit(h, RateOptions{})), nil
}
