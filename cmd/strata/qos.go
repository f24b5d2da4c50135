package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

func runQoS(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 && args[0] == "controller" {
		return runQoSController(ctx, a, args[1:])
	}
	f := newFlags("qos", "status | policy show | policy set FILE", `
Bandwidth sharing at the data servers (docs/qos.md). "status" shows the
bandwidth ledger: each data server's capacity and what its disk, network
and queue did lately, the demand and use of each class and job, and each
job tier's drain backlog with when it should be drained, then the bytes
each data server's scheduler served, per class and job. "policy show"
prints the cluster's QoS policy (JSON); "policy set FILE" (root only)
replaces it with FILE ("-": standard input): class weights, reservations
and limits, per-job weights and limits. A bad policy is refused with the
reason (exit status 2) and the one in force stays. Data servers apply a
new policy within two heartbeats.

  strata qos controller [FLAGS]
      run the drain-bandwidth controller beside slurmctld: it holds tier
      jobs whose drains the global namespace cannot absorb (see strata qos
      controller --help).`)
	mds := f.mdsFlag(a)
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 1 && rest[0] == "status":
		return withClient(ctx, a, mds(), func(c *client.Client) error { return qosStatus(ctx, a.stdout, c) })
	case len(rest) == 2 && rest[0] == "policy" && rest[1] == "show":
		return withClient(ctx, a, mds(), func(c *client.Client) error {
			p, err := c.QoSPolicy(ctx)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "%s\n", p.Doc)
			return err
		})
	case len(rest) == 3 && rest[0] == "policy" && rest[1] == "set":
		doc, err := readPolicyFile(a, rest[2])
		if err != nil {
			return err
		}
		if _, err := qos.ParsePolicy(doc); err != nil {
			return usageErrorf(f.name, "%s: %v", rest[2], err)
		}
		return withClient(ctx, a, mds(), func(c *client.Client) error {
			p, err := c.SetQoSPolicy(ctx, doc)
			var re *rpc.Error
			if errors.As(err, &re) && syscall.Errno(re.Errno) == syscall.EINVAL {
				return usageErrorf(f.name, "%s: %s", rest[2], re.Msg)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "qos policy version %d set\n", p.Version)
			return err
		})
	}
	return usageErrorf(f.name, "want status, policy show or policy set FILE")
}

// readPolicyFile reads a policy document, at most one byte past the
// largest a policy may be (so an oversized one is refused, not cut).
func readPolicyFile(a *app, name string) ([]byte, error) {
	var r io.Reader = a.stdin
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	return io.ReadAll(io.LimitReader(r, qos.MaxPolicySize+1))
}
