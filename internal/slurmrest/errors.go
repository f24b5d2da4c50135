package slurmrest

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels that errors.Is finds in an *Error.
var (
	// ErrUnauthorized: slurmrestd refused the caller (HTTP 401 or 403: no
	// token, a bad or expired one, a user it does not know).
	ErrUnauthorized = errors.New("slurmrest: unauthorized")
	// ErrNoJob: slurmctld knows no such job (slurm error 2017).
	ErrNoJob = errors.New("slurmrest: no such job")
	// ErrTooLarge: a response was larger than Config.MaxResponseBytes.
	ErrTooLarge = errors.New("slurmrest: response too large")
)

// Slurm error numbers the client recognises (slurm/slurm_errno.h).
const errnoInvalidJobID = 2017 // ESLURM_INVALID_JOB_ID

// SlurmError is one entry of a response's "errors" list.
type SlurmError struct {
	Number      int    `json:"error_number"`
	Error       string `json:"error"`       // slurm_strerror of Number, e.g. "Invalid job id specified"
	Description string `json:"description"` // e.g. "Unable to find JobId=99"
	Source      string `json:"source"`      // the function that failed
}

// String is the error as a person reads it: "Invalid job id specified
// (Unable to find JobId=99)".
func (e SlurmError) String() string {
	switch {
	case e.Error == "":
		return e.Description
	case e.Description == "" || e.Description == e.Error:
		return e.Error
	}
	return e.Error + " (" + e.Description + ")"
}

// Error is a request slurmrestd answered with an HTTP error status, or
// with errors in its body.
type Error struct {
	Method, Path string
	Status       int          // the HTTP status
	Errors       []SlurmError // the body's "errors", if it was JSON
	Text         string       // the body when it was not JSON (e.g. "Authentication failure"), trimmed
}

func (e *Error) Error() string {
	var msg []string
	for _, se := range e.Errors {
		msg = append(msg, se.String())
	}
	if len(msg) == 0 && e.Text != "" {
		msg = append(msg, e.Text)
	}
	if len(msg) == 0 {
		msg = append(msg, "no error text")
	}
	return fmt.Sprintf("slurmrestd: %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.Join(msg, "; "))
}

// Is makes errors.Is(err, ErrUnauthorized) and errors.Is(err, ErrNoJob)
// true for the errors they describe.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == 401 || e.Status == 403
	case ErrNoJob:
		for _, se := range e.Errors {
			if se.Number == errnoInvalidJobID {
				return true
			}
		}
	}
	return false
}
