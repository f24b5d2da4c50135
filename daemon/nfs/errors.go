package nfs

import "errors"

// Sentinel errors.
var (
	// ErrBadExport is returned for an export line that does not parse.
	ErrBadExport = errors.New("nfs: bad export")
	// ErrConfig is returned by Config.Validate.
	ErrConfig = errors.New("nfs: bad config")
)
