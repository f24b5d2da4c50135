// Package mds is Strata's metadata server: it owns the namespace (inodes,
// directories, symbolic links, extended attributes), every file's layout,
// the registry of data servers and their health, and it hands out layouts
// with HMAC capabilities so that clients do their I/O directly to the data
// servers. The MDS is never in the data path.
//
// All state lives in a hashicorp/raft finite state machine (fsm.go) whose
// log and stable store is raft-wal under Config.Dir. A change is a command
// (commands.go): the leader decides everything that is not deterministic —
// the time, the placement of a new file's columns — before raft.Apply, and
// the FSM validates and applies it against its current state (namespace.go,
// attrs.go), so validation is race-free. Concurrent commands are group
// committed: several go into one raft entry (proposer.go). Reads are served from the local
// FSM under a read lock (handlers.go says per endpoint whether a stale read
// on a follower is acceptable). Soft state — a data server's free space,
// load and last heartbeat — lives only in the leader's memory
// (registry.go), as does the bandwidth ledger (ledger.go: measured
// capacity, demand and use per class and job, drain backlogs); the QoS
// policy is in the FSM (qos.go). Data of removed files and replaced layouts is collected by
// a leader goroutine (gc.go). Failure handling: a client's LAYOUTERROR
// marks components stale (stale.go), a leader goroutine rebuilds stale
// components and those of data servers that are down or draining
// (rebuild.go, rebuild_copy.go) and repairs corrupt blocks scrub found
// (scrub.go, rebuild_blocks.go), and drains data servers (drain.go); its
// durable state is in the FSM (repairstate.go).
//
// It serves the methods of daemon/rpc's mdsmsg.go and imports daemon/rpc,
// layout and internal/capability; it must not import daemon/ds, client,
// cmd or any other daemon.
package mds
