package rpc

import "github.com/strata-hpc/strata/internal/capability"

// Rebuild from peers: the MDS leader tells the data server that is to hold
// a component what to put in it and from where, and the data server reads
// the survivors itself (daemon/ds rebuild.go). No file byte passes through
// the MDS. A rebuilt component is assembled under a temporary name (the
// staged copy) and made visible whole, once complete and durable.
const (
	// DStageBegin starts (Off 0) or resumes (Off > 0) the staged copy of
	// a component: it is created, or cut to Off. Resuming a staged copy
	// that is gone fails with ENOENT: the copy starts again from 0.
	DStageBegin = "ds.stage.begin"
	// DRebuild fills [Off, Off+Len) of the staged copy (or of the
	// component itself, with Live) from the sources.
	DRebuild = "ds.rebuild"
	// DStageCommit makes the staged copy durable (a checkpoint).
	DStageCommit = "ds.stage.commit"
	// DStagePublish cuts the staged copy to Size, makes it durable and
	// renames it over the component.
	DStagePublish = "ds.stage.publish"
)

// RebuildSource is one component a rebuild reads: column Col on data
// server DS at Addr, with a read capability naming that component on that
// server only.
type RebuildSource struct {
	Col  uint32
	DS   string
	Addr string
	Cap  capability.Token
}

// RebuildReq is the request of every DStage* and DRebuild call. Cap is an
// admin capability for component ID on the called data server only, of
// class rebuild or rebalance. For DRebuild, the geometry (Scheme as
// layout.Scheme prints it, Width, Unit) and FileSize tell the data server
// how the sources relate to the component: with Decode it rebuilds the
// component from K of Sources (rs), tried in order; else Sources are
// copies of it, the first that serves each window is used. A source
// shorter than its share of FileSize has lost bytes and is passed over.
// Live writes into the component itself (the repair of damaged blocks:
// each window is whole blocks, read back once written) instead of the
// staged copy.
type RebuildReq struct {
	Cap      capability.Token
	ID       ComponentID
	Off      uint64
	Len      uint64
	Size     uint64 // DStagePublish: the component's size
	Scheme   string
	Width    uint32
	Unit     uint64
	FileSize uint64
	Decode   bool
	Live     bool
	Sources  []RebuildSource
}

// RebuildResp answers a DStage* or DRebuild call. Written is the number
// of bytes DRebuild wrote (all-zero windows of a staged copy stay holes);
// Size is the staged copy's (or component's) size after the call.
type RebuildResp struct {
	Written uint64
	Size    uint64
}
