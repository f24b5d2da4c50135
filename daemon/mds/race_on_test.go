//go:build race

package mds_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = true
