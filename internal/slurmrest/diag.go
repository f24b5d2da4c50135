package slurmrest

import (
	"context"
	"fmt"
)

// Ping is one controller's answer to GET /ping.
type Ping struct {
	Hostname string `json:"hostname"`
	Ping     string `json:"ping"` // UP or DOWN
	Status   int    `json:"status"`
	Mode     string `json:"mode"` // primary, backup...
}

// Ping asks slurmrestd to ping the controllers. It fails unless at least
// one answers UP.
func (c *Client) Ping(ctx context.Context) ([]Ping, error) {
	var a struct {
		Pings []Ping `json:"pings"`
	}
	if err := c.do(ctx, "GET", "ping", nil, &a); err != nil {
		return nil, err
	}
	for _, p := range a.Pings {
		if p.Ping == "UP" {
			return a.Pings, nil
		}
	}
	return a.Pings, fmt.Errorf("slurmrestd: no controller is up: %+v", a.Pings)
}

// Diag is the part of slurmctld's statistics (GET /diag, sdiag) Strata
// reads.
type Diag struct {
	ServerThreadCount int   `json:"server_thread_count"`
	AgentQueueSize    int   `json:"agent_queue_size"`
	JobsSubmitted     int   `json:"jobs_submitted"`
	JobsStarted       int   `json:"jobs_started"`
	JobsCompleted     int   `json:"jobs_completed"`
	JobsCanceled      int   `json:"jobs_canceled"`
	JobsFailed        int   `json:"jobs_failed"`
	JobsPending       int   `json:"jobs_pending"`
	JobsRunning       int   `json:"jobs_running"`
	ScheduleCycleLast int   `json:"schedule_cycle_last"` // microseconds
	ScheduleQueueLen  int   `json:"schedule_queue_length"`
	BFCycleLast       int   `json:"bf_cycle_last"` // microseconds
	ReqTime           int64 `json:"req_time"`      // Unix seconds
}

// Diag returns slurmctld's statistics.
func (c *Client) Diag(ctx context.Context) (Diag, error) {
	var a struct {
		Statistics Diag `json:"statistics"`
	}
	if err := c.do(ctx, "GET", "diag", nil, &a); err != nil {
		return Diag{}, err
	}
	return a.Statistics, nil
}
