//go:build race

package main

// raceEnabled reports a test binary built with -race: its processes use
// several times the memory (the detector's shadow of every byte touched).
const raceEnabled = true
