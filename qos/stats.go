package qos

// maxIdleJobs is how many jobs with nothing queued a class keeps accounts
// for; past it the idle ones are forgotten (their served bytes too).
const maxIdleJobs = 4096

// ClassStats is what a scheduler served of one class.
type ClassStats struct {
	Class  string `json:"class"`
	Served int64  `json:"served_bytes"`
	Queued int    `json:"queued"`
	// Requested is the bytes asked for: served, waiting, or given up
	// waiting (the class's demand).
	Requested int64 `json:"requested_bytes"`
}

// JobStats is what a scheduler served of one job in one class.
type JobStats struct {
	Job    string `json:"job"`
	Class  string `json:"class"`
	Served int64  `json:"served_bytes"`
	Queued int    `json:"queued"`
	// Requested is the bytes asked for (the job's demand in the class).
	Requested int64 `json:"requested_bytes"`
}

// Stats is a snapshot of a scheduler's counters. Served bytes only grow
// (but for jobs forgotten after maxIdleJobs).
type Stats struct {
	PolicyVersion uint64       `json:"policy_version"`
	Inflight      int          `json:"inflight"`
	Queued        int          `json:"queued"`
	Classes       []ClassStats `json:"classes"`
	Jobs          []JobStats   `json:"jobs"`
	// Granted counts the requests let through; WaitNanos is the time
	// they waited in the queue, summed (their mean wait is the ratio).
	Granted   int64 `json:"granted"`
	WaitNanos int64 `json:"wait_nanos"`
}

// Stats returns the scheduler's counters, classes in class order and jobs
// by class then id.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{PolicyVersion: s.policy.Version, Inflight: s.inflight, Queued: s.queued, Granted: s.granted, WaitNanos: s.waited}
	for i, c := range s.classes {
		name := Class(i).String()
		st.Classes = append(st.Classes, ClassStats{Class: name, Served: c.served, Queued: c.backlog, Requested: c.requested})
		ids := sortedKeys(c.jobs)
		for _, id := range ids {
			j := c.jobs[id]
			st.Jobs = append(st.Jobs, JobStats{Job: id, Class: name, Served: j.served, Queued: len(j.waiters), Requested: j.requested})
		}
	}
	return st
}

// prune forgets idle jobs of c past maxIdleJobs; s.mu is held.
func (c *classQueue) prune() {
	if len(c.jobs) <= maxIdleJobs {
		return
	}
	for id, j := range c.jobs {
		if len(j.waiters) == 0 {
			delete(c.jobs, id)
		}
	}
}
