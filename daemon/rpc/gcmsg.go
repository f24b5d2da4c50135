package rpc

import "github.com/strata-hpc/strata/internal/capability"

// The GC scan (`strata admin gc`): the MDS lists the components of every
// data server and removes those no inode references.
const (
	// DList lists the components of one store subdirectory of a data
	// server; it needs an admin capability.
	DList = "ds.list"
	// MGCScan asks the MDS leader for a GC scan and its report.
	MGCScan = "mds.gcscan"
)

// CompListReq asks for the components whose inode's low byte is Sub.
type CompListReq struct {
	Cap capability.Token
	Sub uint32
}

// DSComp is a component a data server holds and its size.
type DSComp struct {
	ID   ComponentID
	Size uint64
}

// CompListResp answers DList.
type CompListResp struct {
	Comps []DSComp
}

// GCScanReq asks for a GC scan; DryRun finds and reports only.
type GCScanReq struct {
	DryRun bool
}

// GCDataServer is what a GC scan did on one data server. State is
// "scanned", "down" (not scanned) or "failed" (Err says why).
type GCDataServer struct {
	ID         string
	State      string
	Components uint64
	Bytes      uint64
	Err        string
}

// GCOrphan is a component no inode references: why (Reason), and whether
// it was removed (Err says why not).
type GCOrphan struct {
	DS      string
	ID      ComponentID
	Size    uint64
	Reason  string
	Removed bool
	Err     string
}

// GCReport answers MGCScan. Orphans lists at most MaxGCOrphans; Found
// and the byte counts count all.
type GCReport struct {
	DryRun       bool
	DataSvrs     []GCDataServer
	Orphans      []GCOrphan
	Found        uint64
	FoundBytes   uint64
	Removed      uint64
	RemovedBytes uint64
}

// MaxGCOrphans bounds the orphans a GCReport lists.
const MaxGCOrphans = 1000
