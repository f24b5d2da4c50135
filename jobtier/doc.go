// Package jobtier owns what a job tier is, independent of the processes
// that build one: the --storage-tier grammar (Parse, Spec, Options), the
// drain rules' glob matching and destination mapping, and the messages the
// SPANK plugin exchanges with the node agent over its unix socket (Hook*).
// docs/storage-tier.md documents the grammar, docs/slurm.md the socket
// protocol.
//
// It is pure policy: it must not import daemons, the client library, the
// transport, raft, fasthttp, go-fuse or gopsutil (internal/importcheck
// enforces this).
package jobtier
