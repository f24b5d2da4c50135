// Package qos holds Strata's bandwidth policy: token buckets that pace
// background work (rebuild, scrub) so that foreground I/O keeps its share.
// ARCHITECTURE.md gives it schedulers, the bandwidth ledger and Slurm
// admission too; only the bucket exists so far.
//
// It is a pure policy package: it imports the standard library only, no
// daemon, transport, raft, FUSE or gopsutil.
package qos
