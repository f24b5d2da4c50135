package slurmrest

import (
	"context"
	"encoding/json"
	"strconv"
)

// Job is the part of a job's record (GET /jobs, /job/{id}) Strata uses.
type Job struct {
	ID          uint32   `json:"job_id"`
	Name        string   `json:"name"`
	UserName    string   `json:"user_name"`
	UserID      uint32   `json:"user_id"`
	Account     string   `json:"account"`
	Partition   string   `json:"partition"`
	State       string   `json:"job_state"`    // PENDING, RUNNING, COMPLETED...
	StateReason string   `json:"state_reason"` // None, JobHeldUser, JobHeldAdmin, Licenses...
	Priority    uint64   `json:"priority"`     // 0 while held
	Comment     string   `json:"comment"`
	Licenses    string   `json:"licenses"` // e.g. "strata_bw:20"
	Nodes       string   `json:"nodes"`    // the allocated nodes, e.g. "n[1-3]"
	NodeCount   uint32   `json:"node_count"`
	Flags       []string `json:"flags"`
	SubmitTime  int64    `json:"submit_time"` // Unix seconds
	StartTime   int64    `json:"start_time"`  // Unix seconds; expected start while pending
	ExitCode    int64    `json:"exit_code"`
}

// Held reports whether the job waits for a release (priority 0 with a
// hold reason).
func (j Job) Held() bool {
	return j.State == "PENDING" && (j.StateReason == "JobHeldUser" || j.StateReason == "JobHeldAdmin")
}

type jobsAnswer struct {
	Jobs []Job `json:"jobs"`
}

// Jobs lists the jobs slurmctld knows (the queue and recently finished
// jobs).
func (c *Client) Jobs(ctx context.Context) ([]Job, error) {
	var a jobsAnswer
	if err := c.do(ctx, "GET", "jobs", nil, &a); err != nil {
		return nil, err
	}
	return a.Jobs, nil
}

// Job returns one job. An unknown id is an error for which
// errors.Is(err, ErrNoJob) holds.
func (c *Client) Job(ctx context.Context, id uint32) (Job, error) {
	var a jobsAnswer
	if err := c.do(ctx, "GET", "job/"+strconv.FormatUint(uint64(id), 10), nil, &a); err != nil {
		return Job{}, err
	}
	for _, j := range a.Jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return Job{}, &Error{Method: "GET", Path: "/slurm/" + Version + "/job/" + strconv.FormatUint(uint64(id), 10),
		Status: 200, Errors: []SlurmError{{Number: errnoInvalidJobID, Error: "Invalid job id specified", Description: "not in the answer"}}}
}

// JobUpdate is a change to a job (POST /job/{id}); nil fields stay as
// they are.
type JobUpdate struct {
	// Hold true holds a pending job (priority 0), false releases it.
	// Slurmrestd's user may release only its own hold: a user hold of
	// its own job, or any hold as an operator.
	Hold *bool
	// Comment replaces the job's comment (what `squeue -o %k` and
	// `scontrol show job` print). Slurm refuses it once the job's epilog
	// runs.
	Comment *string
	// Priority sets the job's priority (operators only).
	Priority *uint32
}

// MarshalJSON writes v0.0.38's job_properties: priority is a string there.
func (u JobUpdate) MarshalJSON() ([]byte, error) {
	var p struct {
		Hold     *bool   `json:"hold,omitempty"`
		Comment  *string `json:"comment,omitempty"`
		Priority string  `json:"priority,omitempty"`
	}
	p.Hold, p.Comment = u.Hold, u.Comment
	if u.Priority != nil {
		p.Priority = strconv.FormatUint(uint64(*u.Priority), 10)
	}
	return json.Marshal(p)
}

// UpdateJob applies u to job id.
func (c *Client) UpdateJob(ctx context.Context, id uint32, u JobUpdate) error {
	return c.do(ctx, "POST", "job/"+strconv.FormatUint(uint64(id), 10), u, nil)
}

// Hold holds a pending job.
func (c *Client) Hold(ctx context.Context, id uint32) error {
	t := true
	return c.UpdateJob(ctx, id, JobUpdate{Hold: &t})
}

// Release releases a held job.
func (c *Client) Release(ctx context.Context, id uint32) error {
	f := false
	return c.UpdateJob(ctx, id, JobUpdate{Hold: &f})
}

// SetComment replaces a job's comment.
func (c *Client) SetComment(ctx context.Context, id uint32, comment string) error {
	return c.UpdateJob(ctx, id, JobUpdate{Comment: &comment})
}
