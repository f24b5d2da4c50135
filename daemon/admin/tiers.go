package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TierBody is the JSON of one job tier (GET /v1/tiers/{job}, and each
// element of GET /v1/tiers). Sizes are bytes, rates bytes per second.
type TierBody struct {
	Job          uint32          `json:"job"`
	State        string          `json:"state"`
	UID          uint32          `json:"uid"`
	GID          uint32          `json:"gid"`
	Nodes        []string        `json:"nodes"`
	Capacity     uint64          `json:"capacity_per_node"`
	Spec         string          `json:"spec"`
	MountPath    string          `json:"mount_path"`
	Created      *time.Time      `json:"created,omitempty"`
	Ended        *time.Time      `json:"ended,omitempty"`
	Updated      *time.Time      `json:"updated,omitempty"`
	StagedBytes  uint64          `json:"staged_bytes"`
	StagedFiles  uint64          `json:"staged_files"`
	StageRate    float64         `json:"stage_rate"`
	DrainedBytes uint64          `json:"drained_bytes"`
	DrainedFiles uint64          `json:"drained_files"`
	DrainRate    float64         `json:"drain_rate"`
	Errors       []string        `json:"errors"`
	Lost         []string        `json:"lost_files"`
	Dropped      uint64          `json:"dropped_entries,omitempty"`
	PerNode      []TierNodeStats `json:"per_node"`
	Run          uint32          `json:"run"`                 // the job's Slurm restart count when this run began
	JobState     string          `json:"job_state,omitempty"` // how Slurm says this run ended
	Runs         []TierBody      `json:"runs,omitempty"`      // a requeued job's earlier runs, oldest first
}

// TierNodeStats is one node's part of TierBody.
type TierNodeStats struct {
	Node         string  `json:"node"`
	StagedBytes  uint64  `json:"staged_bytes"`
	StagedFiles  uint64  `json:"staged_files"`
	StageSeconds float64 `json:"stage_seconds"`
	DrainedBytes uint64  `json:"drained_bytes"`
	DrainedFiles uint64  `json:"drained_files"`
}

// NewTierBody converts a registry record to its JSON form: the totals and
// rates over the nodes. The stage-in rate is the bytes over the longest
// node's stage-in time (nodes stage in parallel); the drain rate the bytes
// over the copy time.
func NewTierBody(r *rpc.TierRecord) TierBody {
	b := TierBody{
		Job: r.Job, State: r.State, UID: r.Info.UID, GID: r.Info.GID, Nodes: r.Info.Nodes,
		Capacity: r.Info.Capacity, Spec: r.Info.Spec, MountPath: r.Info.MountPath,
		Created: unixTime(r.Info.Created), Ended: unixTime(r.Ended), Updated: unixTime(r.Updated),
		Errors: r.Errors, Lost: r.Lost, Dropped: r.Dropped, PerNode: []TierNodeStats{},
		Run: r.Run, JobState: r.JobState,
	}
	for i := range r.Runs {
		b.Runs = append(b.Runs, NewTierBody(&r.Runs[i]))
	}
	var stageNs, drainNs int64
	for _, s := range r.Stats {
		b.StagedBytes += s.StagedBytes
		b.StagedFiles += s.StagedFiles
		b.DrainedBytes += s.DrainedBytes
		b.DrainedFiles += s.DrainedFiles
		stageNs = max(stageNs, s.StageNanos)
		drainNs = max(drainNs, s.DrainNanos)
		b.PerNode = append(b.PerNode, TierNodeStats{
			Node: s.Node, StagedBytes: s.StagedBytes, StagedFiles: s.StagedFiles,
			StageSeconds: time.Duration(s.StageNanos).Seconds(), DrainedBytes: s.DrainedBytes, DrainedFiles: s.DrainedFiles,
		})
	}
	if stageNs > 0 {
		b.StageRate = float64(b.StagedBytes) / time.Duration(stageNs).Seconds()
	}
	if drainNs > 0 {
		b.DrainRate = float64(b.DrainedBytes) / time.Duration(drainNs).Seconds()
	}
	if b.Nodes == nil {
		b.Nodes = []string{}
	}
	if b.Errors == nil {
		b.Errors = []string{}
	}
	if b.Lost == nil {
		b.Lost = []string{}
	}
	return b
}

// listTiers answers every tier the registry keeps, by job id.
func (s *Server) listTiers(ctx context.Context) (reply, error) {
	if s.tiers == nil {
		return reply{}, fmt.Errorf("%w: this server keeps no tier registry", ErrNotFound)
	}
	ts, err := s.tiers.Tiers(ctx)
	if err != nil {
		return reply{}, err
	}
	out := make([]TierBody, 0, len(ts))
	for i := range ts {
		out = append(out, NewTierBody(&ts[i]))
	}
	return jsonReply(http.StatusOK, out), nil
}

// getTier answers one job's tier.
func (s *Server) getTier(ctx context.Context) (reply, error) {
	if s.tiers == nil {
		return reply{}, fmt.Errorf("%w: this server keeps no tier registry", ErrNotFound)
	}
	p := pathParam(ctx)
	job, err := strconv.ParseUint(p, 10, 32)
	if err != nil || job == 0 {
		return reply{}, fmt.Errorf("%w: job id %q is not a number", ErrBadRequest, p)
	}
	r, err := s.tiers.Tier(ctx, uint32(job))
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, NewTierBody(r)), nil
}
