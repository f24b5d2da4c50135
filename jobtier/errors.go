package jobtier

import (
	"errors"
	"strconv"
)

// ErrInvalid is wrapped by every error about a malformed --storage-tier
// spec, or one the cluster's Options refuse.
var ErrInvalid = errors.New("storage-tier: invalid")

// ErrBadHook is wrapped by every error about a malformed message on the
// agent socket.
var ErrBadHook = errors.New("jobtier: bad hook message")

// SpecError is a spec the grammar or the Options refuse. Its message is
// the one line a user sees from sbatch: it names the offending item and
// says what is expected, e.g.
//
//	storage-tier: item "capacity=lots": capacity must be a size like 200G
type SpecError struct {
	Item string // the item as written, "" when the error is about the whole spec
	Msg  string // what is wrong and what is expected
}

func (e *SpecError) Error() string {
	if e.Item == "" {
		return "storage-tier: " + e.Msg
	}
	return "storage-tier: item " + strconv.Quote(e.Item) + ": " + e.Msg
}

// Is makes errors.Is(err, ErrInvalid) true for every *SpecError.
func (e *SpecError) Is(target error) bool { return target == ErrInvalid }

func itemErr(item, msg string) error { return &SpecError{Item: item, Msg: msg} }
