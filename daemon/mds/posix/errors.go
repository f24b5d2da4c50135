package posix

import (
	"fmt"
	"syscall"
)

// Sentinel errors. Each wraps the errno a local file system answers with,
// so errors.Is(err, syscall.EACCES) holds for ErrDenied.
var (
	// ErrDenied is a permission bit the caller lacks (EACCES).
	ErrDenied = fmt.Errorf("posix: %w", syscall.EACCES)
	// ErrNotPermitted is an operation only the owner or root may do, or a
	// sticky directory's entry the caller does not own (EPERM).
	ErrNotPermitted = fmt.Errorf("posix: %w", syscall.EPERM)
	// ErrNoData is a trusted.* attribute read by a caller that may not see
	// it: it does not exist for them (ENODATA).
	ErrNoData = fmt.Errorf("posix: %w", syscall.ENODATA)
)
