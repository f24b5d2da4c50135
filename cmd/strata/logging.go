package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/strata-hpc/strata/internal/logging"
)

// newLogger returns the text logger on w at level (debug, info, warn,
// error), with repeated warnings and errors rate-limited (internal/logging).
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	log, err := logging.New(w, level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	return log, nil
}
