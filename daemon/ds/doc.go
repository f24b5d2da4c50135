// Package ds is Strata's data server: it stores layout components on local
// disk, serves the DS protocol of package rpc (write, read, commit,
// truncate, remove, stat, info) directly to clients, verifies the
// capability token of every component call, checksums every block with
// CRC32C and heartbeats to the MDS.
//
// On disk (store.go, cache.go, checksum.go, format.go), each component
// (inode, generation, column) is one sparse data file
// Dir/<ino%256 in hex>/<ino>.<gen>.<col> and a sibling ".crc" file holding
// one little-endian CRC32C per BlockSize block. A block's CRC covers the
// whole block with bytes past the end of the component counted as zeros,
// so growing a component never invalidates an earlier block; a stored CRC
// of 0 over an all-zero block is a hole. Dir/ds.format records the server
// id and the block size so that a restart with another geometry is refused
// rather than read as corruption. The store is private: directories are
// made 0700 and files 0600, and a store with wider modes is narrowed when
// the server opens it.
//
// A scrubber (scrub.go) verifies every block of every component in the
// background, on a schedule and when the MDS asks, and reports corrupt
// blocks to the MDS, which repairs them from redundancy. Calls whose
// capability carries a background class (rebuild, scrub) are not counted
// in the load the heartbeat reports.
//
// Every heartbeat carries what the server measured (telemetry.go): its
// disk's and network's counters read with gopsutil v4 through the Meter
// interface, its QoS scheduler's served bytes and queue wait, and its
// capacity, for the MDS's bandwidth ledger.
//
// The MDS has a data server rebuild a component from its peers
// (rebuild.go): it reads the survivors with capabilities the MDS signed,
// verifies and copies or decodes them, and assembles the component in a
// staged copy (stage.go) renamed into place only once complete and
// durable. No rebuilt byte passes through the MDS.
//
// All disk access goes through the Disk interface so tests can inject
// EIO, torn writes and latency.
//
// It imports the transport (daemon/rpc), internal/capability and layout
// (geometry and the erasure code of rebuilds); it must not import the
// MDS, the client, raft or go-fuse.
package ds
