package rpc

import "github.com/strata-hpc/strata/internal/capability"

// Failure handling: the messages of LAYOUTERROR, rebuild, scrub and data
// server drain (daemon/mds rebuild.go, stale.go, scrub.go, drain.go and
// daemon/ds scrub.go).
const (
	// MLayoutError reports failed component calls of a redundant file
	// (pNFS flex files' LAYOUTERROR): the MDS marks the components stale
	// and answers with the file's layout as it now is.
	MLayoutError = "mds.layouterror"
	// MScrubReport is a data server reporting what its scrubber found in
	// one component.
	MScrubReport = "mds.scrub.report"
	// MScrubStart asks the MDS to start a scrub pass on every data server.
	MScrubStart = "mds.scrub.start"
	// MScrubStatus returns every data server's scrub progress and the
	// blocks that had no redundancy to repair from.
	MScrubStatus = "mds.scrub.status"
	// MRebuildStatus returns the rebuild manager's queue and progress.
	MRebuildStatus = "mds.rebuild.status"
	// MDSDrain marks a data server draining (or, with Cancel, no longer).
	MDSDrain = "mds.ds.drain"
	// MDSList lists the data servers with their state and what they hold.
	MDSList = "mds.ds.list"

	// DScrubStart starts a scrub pass on a data server now.
	DScrubStart = "ds.scrub.start"
	// DScrubStatus returns a data server's scrub progress.
	DScrubStatus = "ds.scrub.status"
)

// QoS classes carried in a capability's Class. A data server does not count
// the calls of the background classes in the load it reports, so that the
// rebuild manager backs off for foreground I/O only.
// The numbers are qos.Class's.
const (
	ClassForeground uint8 = 0
	ClassStage      uint8 = 1
	ClassDrain      uint8 = 2
	ClassRebuild    uint8 = 3
	ClassScrub      uint8 = 4
	ClassRebalance  uint8 = 5
)

// ComponentError is one failed call to one component.
type ComponentError struct {
	Comp  uint32 // index into the layout's Targets
	DS    string // the data server the client called
	Op    string // read, write, truncate, commit
	Errno uint32
	Off   uint64 // component byte range of the failed call (Len 0: unknown)
	Len   uint64
}

// LayoutErrorReq is a LAYOUTERROR: the components of generation Gen of
// file Ino that failed. Write asks for a write capability in the answer.
type LayoutErrorReq struct {
	Ino    uint64
	Gen    uint64
	Write  bool
	Errors []ComponentError
	Job    string // appended later: the QoS tag of the new capability (LayoutGetReq)
	Class  uint8
}

// LayoutReturnReq is a LAYOUTRETURN; Write says the returned layout was
// granted for writing (the MDS tracks writers, see daemon/mds/stale.go).
// It decodes from an InoReq of an older client, with Write unset.
type LayoutReturnReq struct {
	Ino   uint64
	Write bool
}

// ScrubReportReq is what a data server's scrubber found in component ID:
// the blocks (of BlockSize bytes) failing their checksum, or with Clean
// set, none any more (sent for a component reported bad before). Cap is an
// admin capability the data server signs with the cluster secret.
type ScrubReportReq struct {
	Cap       capability.Token
	DS        string
	ID        ComponentID
	Blocks    []uint64
	Clean     bool
	BlockSize uint32
}

// ScrubStartReq starts a scrub pass on a data server, or with Comps only
// a check of those components (a client read one of their blocks with a
// bad checksum); Cap is an admin capability of the MDS.
type ScrubStartReq struct {
	Cap   capability.Token
	Comps []ComponentID
}

// DSScrubStatus is one data server's scrub progress.
type DSScrubStatus struct {
	ID         string
	State      string // running, idle, down (the MDS could not reach it)
	Passes     uint64 // completed passes since the server started
	Components uint64 // components verified in the current (or last) pass
	Bytes      uint64 // bytes verified in the current (or last) pass
	BadBlocks  uint64 // blocks failing their checksum found since start
	PassStart  int64  // unix nanoseconds; 0: never
	PassEnd    int64  // unix nanoseconds of the last completed pass; 0: none
	Rate       uint64 // bytes per second the scrubber is limited to
}

// DamagedBlocks is a component with blocks that fail their checksum, as
// scrub found them. Reads of those blocks fail with EIO; with redundancy
// the MDS repairs them, without (scheme none) they are lost.
type DamagedBlocks struct {
	Ino       uint64
	Gen       uint64
	Col       uint32
	DS        string
	Blocks    []uint64
	BlockSize uint32
	Found     int64 // unix nanoseconds
	Path      string
	Layout    string
}

// ScrubStatusResp answers MScrubStart and MScrubStatus. Unrecoverable
// lists the damaged components of files without redundancy (and of files
// that lost too much of it), Repairing those the MDS is repairing.
type ScrubStatusResp struct {
	DataSvrs      []DSScrubStatus
	Unrecoverable []DamagedBlocks
	Repairing     []DamagedBlocks
}

// RebuildTask is one component the rebuild manager recreates or moves.
type RebuildTask struct {
	Ino    uint64
	Path   string // "" if not known
	Comp   uint32
	From   string // data server it was on
	To     string // target, once chosen
	Reason string // stale, down, drain, scrub
	State  string // queued, running, waiting (writers), blocked
	Detail string // why it waits or is blocked
	Bytes  uint64 // bytes written so far
	Size   uint64 // bytes to write (estimate until running)
}

// RebuildStatusResp answers MRebuildStatus.
type RebuildStatusResp struct {
	Queued      uint32
	Running     uint32
	Waiting     uint32
	Blocked     uint32
	Done        uint64 // components rebuilt since this node took office
	Failed      uint64 // attempts that failed and were requeued
	BytesDone   uint64 // bytes written by rebuilds since this node took office
	BytesLeft   uint64 // estimate of what the queue still has to write
	Rate        float64
	RateLimit   uint64  // Config.RebuildRate, bytes per second
	ETASeconds  float64 // BytesLeft/Rate; 0 when idle or unknown
	Tasks       []RebuildTask
	Unrecovered uint32 // components with no redundancy left to rebuild from
}

// DrainReq drains data server ID (moves every component off it and places
// nothing new on it), or with Cancel stops draining it.
type DrainReq struct {
	ID     string
	Cancel bool
}

// DSStatus is one data server with what the MDS knows it holds.
type DSStatus struct {
	Info       DSInfo
	Draining   bool
	Components uint64 // components the layouts place on it
	Stale      uint64 // of which stale
	Bytes      uint64 // estimated bytes of those components
}

// DSListResp answers MDSList and MDSDrain.
type DSListResp struct {
	DataSvrs []DSStatus
}
