// Package bwhold is the drain-bandwidth controller: it keeps Slurm from
// starting tier jobs whose drains the global namespace cannot absorb.
// Every pass it reads the queue through slurmrestd (internal/slurmrest),
// adds the drain bandwidth already in use (running jobs' strata_bw
// licenses plus the backlog its Demand source reports) and, in submit
// order, holds each pending job whose bw= would push the total past
// Config.Capacity (or, when 0, the capacity its Capacity source reports:
// the bandwidth ledger's measure), writing why into the job's comment (what a user sees
// with `squeue -o %k` and `scontrol show job`), and releases the jobs it
// held, restoring their comment, as the backlog clears.
//
// It keeps no state of its own: a job it holds carries HoldPrefix in its
// comment, so a restarted controller picks up where the last one left,
// and it never releases a hold it did not set. When slurmrestd cannot be
// reached or refuses it (401), it changes nothing and logs that at most
// once a minute.
//
// `strata qos controller` (cmd/strata) runs it beside slurmctld, fed by
// the global MDS's bandwidth ledger.
//
// It imports internal/slurmrest and jobtier; it must not import another
// daemon.
package bwhold
