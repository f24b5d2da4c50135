package qos

import "fmt"

// Class is the kind of work a data server request does. Its number is
// what a capability carries (capability.Token.Class); the numbers of the
// existing classes never change.
type Class uint8

// The QoS classes.
const (
	ClassIO        Class = 0 // applications' own reads and writes
	ClassStage     Class = 1 // stage-in of a job tier
	ClassDrain     Class = 2 // drain of a job tier to the global namespace
	ClassRebuild   Class = 3 // repair of lost or stale components
	ClassScrub     Class = 4 // verification of stored checksums
	ClassRebalance Class = 5 // moves of components between servers
	NumClasses           = 6
)

var classNames = [NumClasses]string{"io", "stage", "drain", "rebuild", "scrub", "rebalance"}

// String returns the class's name, as the policy document spells it.
func (c Class) String() string {
	if int(c) < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class%d", c)
}

// Valid reports whether c is a known class.
func (c Class) Valid() bool { return int(c) < NumClasses }

// ParseClass returns the class named s.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if n == s {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q (known: io, stage, drain, rebuild, scrub, rebalance)", ErrUnknownClass, s)
}

// Tag names who a request serves: a job (empty: none) and a class.
type Tag struct {
	Job   string
	Class Class
}
