package rpc

import "github.com/strata-hpc/strata/internal/capability"

// DS method names.
const (
	DWrite    = "ds.write"
	DRead     = "ds.read"
	DCommit   = "ds.commit"
	DTruncate = "ds.truncate"
	DGrow     = "ds.grow"  // extend to Size if shorter, never shrink, durably
	DPunch    = "ds.punch" // Len bytes at Off read as zeros and hold no space; the size is kept
	DRemove   = "ds.remove"
	DStat     = "ds.stat"
	DInfo     = "ds.info"
)

// ComponentID names one component: a column of one generation of a file.
type ComponentID struct {
	Ino uint64
	Gen uint64
	Col uint32
}

// DSReq is the header of every component call. Off and Len are used by
// read and punch (Len bytes at Off) and write (the data follows the header; Off is
// where it goes); Size by truncate. Tombstone, set by the MDS on a remove
// of a generation that is gone (unlinked, or replaced by a truncate), is
// the time (unix ns) until which the data server refuses every client
// call of that inode and generation: capabilities granted before the
// removal are revoked.
type DSReq struct {
	Cap       capability.Token
	ID        ComponentID
	Off       uint64
	Len       uint64
	Size      uint64
	Tombstone int64  // appended later: 0 from an older MDS
	Sums      []byte // write: the data's checksums (sums.go), required
	// Direct (read; appended later: false from an older client) lets the
	// data server send the whole blocks it holds straight from its file
	// (direct.go) without verifying them: the caller verifies every block
	// against the reply's Sums, and reads again without Direct when one
	// fails, so that a block the server finds corrupt is reported as
	// such, and one overwritten while it was sent is read whole.
	Direct bool
}

// DSResp answers a component call. Size is the component's size after the
// call; a read's data follows the header and is short where the component
// ends, and Sums holds its checksums (sums.go).
type DSResp struct {
	Size uint64
	Sums []byte
}

// DSInfoResp answers Info.
type DSInfoResp struct {
	ID       string
	Capacity uint64
	Free     uint64
}
