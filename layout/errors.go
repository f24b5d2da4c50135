package layout

import "errors"

// ErrInvalid is wrapped by every error about a malformed or out-of-range
// layout string or value.
var ErrInvalid = errors.New("layout: invalid")

// ErrNoTargets is returned by placement when there are not enough usable
// data servers for the requested width.
var ErrNoTargets = errors.New("layout: not enough data servers")
