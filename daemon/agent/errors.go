package agent

import (
	"errors"
	"fmt"
)

// Sentinel errors of the agent.
var (
	// ErrConfig is wrapped by every Config.Validate error.
	ErrConfig = errors.New("agent: invalid config")
	// ErrClosed is returned by calls on a closed or never started Server.
	ErrClosed = errors.New("agent: closed")
)

// jobError is a failure that is not this node's fault: the user's (a
// missing stage-in source, a full tier, a destination the user may not
// write) or another node's (a tier daemon elsewhere that never came up).
// The plugin fails the job with its message and keeps the node in service.
// Any other error of a prolog or epilog is the node's: Slurm drains it.
type jobError struct{ msg string }

func (e *jobError) Error() string { return e.msg }

// jobErrorf builds a jobError.
func jobErrorf(format string, args ...any) error {
	return &jobError{msg: fmt.Sprintf(format, args...)}
}

// isJobError reports whether err is the job's fault (see jobError).
func isJobError(err error) bool {
	var j *jobError
	return errors.As(err, &j)
}
