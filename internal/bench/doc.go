// Package bench holds the whole-system benchmarks `make bench` runs. Each
// measures its baseline in the same run (raw loopback TCP, raw Raft
// applies, bare fasthttp) and prints the Strata figure as a ratio to it,
// because absolute numbers on a shared 2-core machine mean little.
package bench
