package rpc

import "github.com/strata-hpc/strata/internal/capability"

// Tier registry method names. The global MDS keeps a record of every job
// tier (daemon/agent builds them): who, where, how big, how its stage-in
// and drains went, what was lost. The node agents write it (TierPut, with
// an admin capability signed by the cluster secret); anyone reads it.
const (
	MTierPut  = "mds.tier.put"
	MTierGet  = "mds.tier.get"
	MTierList = "mds.tier.list"
)

// Tier states, in the order a tier goes through them. Done, failed and
// cancelled are final: a later update cannot leave them, except that a
// node's failure turns done into failed, and a job Slurm says was
// cancelled turns done into cancelled.
const (
	TierAssembling = "assembling"
	TierStaging    = "staging"
	TierRunning    = "running"
	TierDraining   = "draining"
	TierDone       = "done"
	TierFailed     = "failed"
	TierCancelled  = "cancelled"
)

// TierFinal reports whether state is final (done, failed or cancelled).
func TierFinal(state string) bool {
	return state == TierDone || state == TierFailed || state == TierCancelled
}

// TierInfo is what does not change during a tier's life.
type TierInfo struct {
	UID, GID  uint32
	Nodes     []string // the job's nodes, the first runs the tier's MDS
	Capacity  uint64   // bytes per node
	Spec      string   // the --storage-tier value, canonical
	MountPath string
	Created   int64 // unix nanoseconds
}

// TierNodeStats are one node's cumulative counters. Each agent sends its
// own node's; the record keeps the latest per node.
type TierNodeStats struct {
	Node         string
	StagedBytes  uint64
	StagedFiles  uint64
	StageNanos   int64 // time this node spent staging in
	DrainedBytes uint64
	DrainedFiles uint64
	DrainNanos   int64 // time spent copying drains (summed over files in flight)
}

// TierPutReq creates or updates the record of one run of a job's tier.
// Run is the job's Slurm restart count when the run began (a requeued job
// runs again under the same id): a put of a later run than the record's
// starts a new run, keeping the earlier ones; a put of an earlier run
// updates that run. Info is applied when set (first put of a run); State
// when not empty; JobState (Slurm's end state of the run, e.g. COMPLETED,
// CANCELLED, REQUEUED) when not empty; Stats replaces the node's counters
// when Stats.Node is set; Errors and Lost are appended without
// duplicates.
type TierPutReq struct {
	Cap      capability.Token // OpAdmin, signed with the cluster secret
	Job      uint32
	Info     *TierInfo
	State    string
	Ended    int64 // unix nanoseconds, with a final State
	Stats    TierNodeStats
	Errors   []string
	Lost     []string
	Run      uint32
	JobState string
}

// TierRecord is a tier as the registry keeps it; the totals are the sums
// over Stats.
type TierRecord struct {
	Job     uint32
	Info    TierInfo
	State   string
	Updated int64 // unix nanoseconds of the last put
	Ended   int64
	Stats   []TierNodeStats // one per node that reported, in node order
	Errors  []string        // at most MaxTierErrors, the first ones
	Lost    []string        // tier paths of files that could not be drained because their data is gone
	Dropped uint64          // errors and lost files beyond the caps, not kept
	Run     uint32          // the job's Slurm restart count when this run began
	// JobState is how Slurm says this run of the job ended (COMPLETED,
	// FAILED, CANCELLED, TIMEOUT, REQUEUED, ...); "" until it is known.
	JobState string
	// Runs are the earlier runs of a requeued job, oldest first, each
	// without Runs of its own; at most MaxTierRuns (the first is kept).
	Runs []TierRecord
}

// Bounds of one record, so that a broken job cannot grow the FSM without
// limit.
const (
	MaxTierErrors = 100
	MaxTierLost   = 10000
	MaxTierString = 4096
	MaxTierRuns   = 16
)

// TierReq asks for one job's record.
type TierReq struct {
	Job uint32
}

// TierResp answers TierGet.
type TierResp struct {
	Tier TierRecord
}

// TierListResp answers TierList: every record, by job id.
type TierListResp struct {
	Tiers []TierRecord
}
