package bwhold

import (
	"errors"
	"time"
)

// Config of the controller.
type Config struct {
	// Capacity is the drain bandwidth the global namespace absorbs, in
	// bytes per second: fixed, or 0 to follow Deps.Capacity (the
	// bandwidth ledger's measured capacity). One of the two is required.
	Capacity int64
	// Interval between passes; 0: DefaultConfig's.
	Interval time.Duration
	// License is the license a job's bw= becomes (job_submit.lua).
	License string
	// ErrorEvery bounds how often an unreachable slurmrestd is logged.
	ErrorEvery time.Duration
}

// DefaultConfig is a pass every 5 s over strata_bw, errors logged once a
// minute. Capacity must still be set.
func DefaultConfig() Config {
	return Config{Interval: 5 * time.Second, License: "strata_bw", ErrorEvery: time.Minute}
}

// Validate reports a Config New refuses.
func (c Config) Validate() error {
	switch {
	case c.Capacity < 0:
		return errors.New("bwhold: capacity must not be negative")
	case c.Interval <= 0 || c.ErrorEvery <= 0:
		return errors.New("bwhold: interval and error interval must be more than 0")
	case c.License == "":
		return errors.New("bwhold: no license name")
	}
	return nil
}
