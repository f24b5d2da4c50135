package rpc

import (
	"errors"
	"fmt"
)

// MaxNameLen bounds a data server id, node name or rack name.
const MaxNameLen = 128

// ErrName is wrapped by CheckName's errors.
var ErrName = errors.New("rpc: invalid name")

// CheckName returns an error wrapping ErrName unless s is a safe data
// server id, node or rack name: 1 to MaxNameLen bytes of ASCII letters,
// digits, '.', '_' and '-', starting with a letter or a digit. Such a name
// can be a file name, a log field and a table cell as it is. what names
// the field in the error ("id", "node", "rack").
func CheckName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrName, what)
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrName, what, len(s), MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum || i > 0 && (c == '.' || c == '_' || c == '-') {
			continue
		}
		return fmt.Errorf("%w: %s %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", ErrName, what, s)
	}
	return nil
}
