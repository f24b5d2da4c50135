package mds

import (
	"context"
	"maps"
	"slices"
	"strings"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// The tier registry: one record per job tier (daemon/agent), part of the
// FSM so that it outlives the job, the agents and an MDS restart. Only the
// node agents write it, with an admin capability signed by the cluster
// secret; every put merges into the record (tierPutCmd). Reads are served
// by the leader from its FSM, like the namespace's.
//
// Copy-on-write: a snapshot shares the records, so a put stores a new
// record and never modifies one in place.

// maxTiers bounds the registry: past it, the final record updated longest
// ago is dropped (the oldest non-final one if none is final).
const maxTiers = 10000

// tierPutCmd merges an agent's report into a tier's record. Now is the
// leader's clock.
type tierPutCmd struct {
	Req rpc.TierPutReq
	Now int64
}

// tierTable maps a job id to its tier's record.
type tierTable map[uint32]*rpc.TierRecord

func (st *state) applyTierPut(c *tierPutCmd) result {
	r := c.Req
	// A put may come before the first node's (with Info): another node's
	// prolog may fail before the first node's report arrives.
	old := st.tiers[r.Job]
	var rec *rpc.TierRecord
	switch {
	case old == nil:
		rec = &rpc.TierRecord{Job: r.Job, Run: r.Run}
	case r.Run > old.Run:
		rec = newTierRun(old, r.Run) // the job was requeued
	default:
		rec = cloneTier(old)
	}
	run := rec
	if r.Run < rec.Run {
		i := slices.IndexFunc(rec.Runs, func(p rpc.TierRecord) bool { return p.Run == r.Run })
		if i < 0 {
			return result{} // a run no longer kept
		}
		run = &rec.Runs[i]
	}
	mergeTierPut(run, &r)
	run.Updated = c.Now
	rec.Updated = c.Now
	st.tiers[r.Job] = rec
	if len(st.tiers) > maxTiers {
		st.evictTier()
	}
	return result{}
}

// newTierRun starts the record of a new run of old's job: old, without
// its runs, becomes the last of the earlier runs (the first one is kept
// when there are too many). The new run has old's info, without a
// creation time, until its own arrives.
func newTierRun(old *rpc.TierRecord, run uint32) *rpc.TierRecord {
	prev := cloneTier(old)
	runs := prev.Runs
	prev.Runs = nil
	runs = append(runs, *prev)
	if len(runs) > rpc.MaxTierRuns {
		runs = slices.Delete(runs, 1, 2)
	}
	info := prev.Info
	info.Nodes = slices.Clone(info.Nodes)
	info.Created = 0
	return &rpc.TierRecord{Job: old.Job, Run: run, Info: info, Runs: runs}
}

// mergeTierPut merges one report into the record of its run.
func mergeTierPut(rec *rpc.TierRecord, r *rpc.TierPutReq) {
	if r.Info != nil {
		rec.Info = *r.Info
		rec.Info.Nodes = slices.Clone(r.Info.Nodes)
	}
	switch {
	case r.State == "":
	case !rpc.TierFinal(rec.State):
		rec.State = r.State
	case r.State == rpc.TierFailed && rec.State == rpc.TierDone:
		rec.State = rpc.TierFailed // one node's failure is the tier's
	}
	if r.JobState != "" {
		rec.JobState = truncate(r.JobState)
	}
	if rec.State == rpc.TierDone && strings.HasPrefix(rec.JobState, "CANCELLED") {
		rec.State = rpc.TierCancelled
	}
	if r.Ended != 0 && rec.Ended == 0 {
		rec.Ended = r.Ended
	}
	if r.Stats.Node != "" {
		i := slices.IndexFunc(rec.Stats, func(s rpc.TierNodeStats) bool { return s.Node == r.Stats.Node })
		if i < 0 {
			rec.Stats = append(rec.Stats, r.Stats)
			slices.SortFunc(rec.Stats, func(a, b rpc.TierNodeStats) int { return strings.Compare(a.Node, b.Node) })
		} else {
			rec.Stats[i] = r.Stats
		}
	}
	for _, e := range r.Errors {
		e = truncate(e)
		switch {
		case slices.Contains(rec.Errors, e): // every node may report the same
		case len(rec.Errors) >= rpc.MaxTierErrors:
			rec.Dropped++
		default:
			rec.Errors = append(rec.Errors, e)
		}
	}
	for _, l := range r.Lost {
		l = truncate(l)
		switch {
		case slices.Contains(rec.Lost, l):
		case len(rec.Lost) >= rpc.MaxTierLost:
			rec.Dropped++
		default:
			rec.Lost = append(rec.Lost, l)
		}
	}
}

// evictTier drops the record that matters least: the final one updated
// longest ago, else the oldest. Ties go to the smaller job id, so that
// every replica drops the same one.
func (st *state) evictTier() {
	var victim *rpc.TierRecord
	better := func(a, b *rpc.TierRecord) bool { // a is a better victim than b
		if fa, fb := rpc.TierFinal(a.State), rpc.TierFinal(b.State); fa != fb {
			return fa
		}
		if a.Updated != b.Updated {
			return a.Updated < b.Updated
		}
		return a.Job < b.Job
	}
	for _, r := range st.tiers {
		if victim == nil || better(r, victim) {
			victim = r
		}
	}
	delete(st.tiers, victim.Job)
}

func cloneTier(r *rpc.TierRecord) *rpc.TierRecord {
	c := *r
	c.Info.Nodes = slices.Clone(r.Info.Nodes)
	c.Stats = slices.Clone(r.Stats)
	c.Errors = slices.Clone(r.Errors)
	c.Lost = slices.Clone(r.Lost)
	if r.Runs != nil {
		c.Runs = make([]rpc.TierRecord, len(r.Runs))
		for i := range r.Runs {
			c.Runs[i] = *cloneTier(&r.Runs[i])
		}
	}
	return &c
}

func truncate(s string) string {
	if len(s) > rpc.MaxTierString {
		return s[:rpc.MaxTierString]
	}
	return s
}

// tierPut checks the agent's capability and applies its report.
func (s *Server) tierPut(_ context.Context, r *rpc.TierPutReq) (*rpc.Empty, error) {
	if err := r.Cap.Verify(s.cfg.Secret, s.clock(), 0, 0, capability.OpAdmin); err != nil || r.Cap.Ops&capability.OpAdmin == 0 {
		return nil, errf(syscall.EACCES, "tier put of job %d: only a node agent holding the cluster secret may write the tier registry", r.Job)
	}
	if r.Job == 0 {
		return nil, errf(syscall.EINVAL, "tier put: job id 0")
	}
	r.Cap = capability.Token{} // not kept in the log
	if _, err := s.apply(cmdTierPut, &tierPutCmd{Req: *r, Now: s.now()}); err != nil {
		return nil, err
	}
	return &rpc.Empty{}, nil
}

// Tier returns the record of job's tier (ENOENT if there is none).
func (s *Server) Tier(_ context.Context, job uint32) (*rpc.TierRecord, error) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	r := s.fsm.st.tiers[job]
	if r == nil {
		return nil, errf(syscall.ENOENT, "no tier recorded for job %d", job)
	}
	return cloneTier(r), nil
}

// Tiers returns every tier record, by job id.
func (s *Server) Tiers(context.Context) ([]rpc.TierRecord, error) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	out := make([]rpc.TierRecord, 0, len(s.fsm.st.tiers))
	for _, job := range slices.Sorted(maps.Keys(s.fsm.st.tiers)) {
		out = append(out, *cloneTier(s.fsm.st.tiers[job]))
	}
	return out, nil
}

func (s *Server) tierGet(ctx context.Context, r *rpc.TierReq) (*rpc.TierResp, error) {
	rec, err := s.Tier(ctx, r.Job)
	if err != nil {
		return nil, err
	}
	return &rpc.TierResp{Tier: *rec}, nil
}

func (s *Server) tierList(ctx context.Context, _ *rpc.Empty) (*rpc.TierListResp, error) {
	ts, err := s.Tiers(ctx)
	if err != nil {
		return nil, err
	}
	return &rpc.TierListResp{Tiers: ts}, nil
}

// tierRecord is one tier in a snapshot.
type tierRecord struct {
	Rec rpc.TierRecord
}
