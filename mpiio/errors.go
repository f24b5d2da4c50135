package mpiio

import (
	"errors"
	"strconv"
)

// ErrInvalid is wrapped by every error about a hint value Strata cannot
// turn into a layout.
var ErrInvalid = errors.New("mpiio: invalid hint")

// HintError is a hint whose value is not valid. Its message names the hint
// and the value as the user wrote them, then the reason:
// "hint striping_unit=3000: must be a multiple of 4K".
type HintError struct {
	Key    string
	Value  string
	Reason string
}

func (e *HintError) Error() string {
	v := e.Value
	if v == "" || strconv.Quote(v) != `"`+v+`"` || containsSpace(v) {
		v = strconv.Quote(v)
	}
	return "hint " + e.Key + "=" + v + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *HintError) Unwrap() error { return ErrInvalid }

func containsSpace(s string) bool {
	for _, r := range s {
		if r == ' ' || r == '\t' {
			return true
		}
	}
	return false
}
