package logging

import "errors"

// ErrLevel is a log level that is not debug, info, warn or error.
var ErrLevel = errors.New("logging: want debug, info, warn or error")
