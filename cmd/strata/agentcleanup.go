package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/strata-hpc/strata/daemon/agent"
	"github.com/strata-hpc/strata/jobtier"
)

// runAgentCleanup is `strata agent cleanup JOBID`: the playbook's "run
// the epilog by hand" for a job whose epilog never reached this node's
// agent.
func runAgentCleanup(ctx context.Context, a *app, args []string) error {
	f := newFlags("agent cleanup", "JOBID", `
Tear down, on this node, the tier of Slurm job JOBID as its epilog would
have (the final drain on the job's first node, the unmount, the tier's
daemons, its data and its state), for a job whose epilog never reached
this node's agent: the agent was down or lost its state. It takes the
agent's keys (flags, STRATA_* environment or --config file) to find the
agent's socket and directories. It asks the running agent; when no agent
answers on the socket it does the work itself. It refuses a job that Slurm
(scontrol show job) does not say has ended, unless --force. A restarted
agent does the same by itself for every tier of an ended job. As root, on
the node (docs/agent.md, failure playbook).`)
	force := f.Bool("force", false, "tear the tier down even if Slurm does not say that the job has ended")
	af := newAgentFlags()
	af.o.register(f)
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 1, 1); err != nil {
		return err
	}
	if err := af.o.apply(a); err != nil {
		return err
	}
	job, err := strconv.ParseUint(rest[0], 10, 32)
	if err != nil || job == 0 {
		return usageErrorf(f.name, "JOBID %q: want a Slurm job id", rest[0])
	}
	cfg, err := af.config()
	if err != nil {
		return err
	}
	req := jobtier.HookRequest{Op: jobtier.OpCleanup, JobID: uint32(job), Node: cfg.Node, Force: *force}
	r, err := askAgent(ctx, cfg.Socket, req, cfg.EpilogTimeout+time.Minute)
	switch {
	case err == nil && r.OK:
		fmt.Fprintf(a.stdout, "the storage tier of job %d is torn down on %s (by its agent)\n", job, cfg.Node)
		return nil
	case err == nil:
		return fmt.Errorf("agent cleanup of job %d on %s: %s", job, cfg.Node, r.Error)
	case !errors.Is(err, errNoAgent):
		return fmt.Errorf("agent cleanup of job %d on %s: %w", job, cfg.Node, err)
	}
	log, err := newLogger(a.stderr, "warn")
	if err != nil {
		return err
	}
	if err := agent.CleanupOffline(ctx, cfg, agent.Deps{Log: log}, uint32(job), *force); err != nil {
		return fmt.Errorf("agent cleanup of job %d on %s (no agent answers at %s): %w", job, cfg.Node, cfg.Socket, err)
	}
	fmt.Fprintf(a.stdout, "the storage tier of job %d is torn down on %s (no agent answers at %s: done by this command)\n", job, cfg.Node, cfg.Socket)
	return nil
}

// errNoAgent: nothing listens on the agent's socket.
var errNoAgent = errors.New("no agent answers")

// askAgent sends one request to the agent at socket and reads its reply,
// within d.
func askAgent(ctx context.Context, socket string, req jobtier.HookRequest, d time.Duration) (jobtier.HookReply, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", socket)
	if err != nil {
		return jobtier.HookReply{}, fmt.Errorf("%w at %s: %w", errNoAgent, socket, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := jobtier.WriteHookLine(c, req); err != nil {
		return jobtier.HookReply{}, err
	}
	return jobtier.ReadHookReply(bufio.NewReader(c))
}
