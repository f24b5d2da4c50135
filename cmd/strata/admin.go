package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

func runAdmin(ctx context.Context, a *app, args []string) error {
	f := newFlags("admin", "mds list | mds add ID RAFT_ADDR [--force] | mds remove ID | mds recover --dir DIR --voters LIST [--dry-run] | "+adminRepairUsage, `
Administer the cluster. "mds list" shows the MDS replicas (raft voters),
which one leads, and their addresses; "mds add ID RAFT_ADDR" adds a replica
that was started with --join (refused if nothing answers at RAFT_ADDR,
unless --force); "mds remove ID" removes one (the last voter cannot be
removed). "mds recover" brings back an MDS group that lost its quorum for
good: run it on a surviving replica's --dir while its MDS is stopped, with
the voters that remain (--voters id=raftaddr,...), then start it again
(docs/failures.md has the whole procedure; --dry-run prints the replica's
last index to compare survivors).

"rebuild status" shows the components the MDS is rebuilding (stale after a
failed write, on a data server down for longer than rebuild_delay, on a
draining one, or with corrupt blocks), their progress, rate and ETA.
"scrub start" has every data server verify every block's checksum now;
"scrub status" shows their progress, the corrupt blocks being repaired
from redundancy and those with none to repair from. "ds list" shows the
data servers and what they hold; "ds drain ID" moves everything off one
(refused, with the reason, if some file's data would have nowhere to
go) and places nothing new on it, "ds undrain ID" stops that. To add a
data server, start it ('strata ds --id ID --mds ... --listen ADDR'
registers itself), then "ds add ADDR" waits until it has joined and says
so, or says why not. The MDS then moves existing data onto it in the
background, throttled like rebuilds, until the data servers' fills differ
by less than its rebalance_spread ("rebuild status" lists the moves with
reason rebalance). "gc" lists every data server's components and removes
those no inode references (left by a removal that never reached a data
server, or copied in by hand), and reports them; "gc --dry-run" only
reports.`)
	mds := f.mdsFlag(a)
	force := f.Bool("force", false, "mds add: add the voter even if its raft address does not answer")
	dir := f.String("dir", "", "mds recover: the stopped replica's data `directory` (its --dir)")
	voters := f.String("voters", "", "mds recover: the surviving voters, comma-separated `id=raftaddr` (as --raft-peers)")
	dryRun := f.Bool("dry-run", false, "mds recover: only print the replica's last raft index and term; gc: report what is unreferenced, remove nothing")
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if len(rest) >= 2 && rest[0] == "mds" && rest[1] == "recover" {
		if len(rest) != 2 {
			return usageErrorf("admin", "want: mds recover --dir DIR --voters id=raftaddr,...")
		}
		return runMDSRecover(a, *dir, *voters, *dryRun)
	}
	if *dryRun {
		if len(rest) != 1 || rest[0] != "gc" {
			return usageErrorf("admin", "--dry-run goes with gc and mds recover only")
		}
		rest = []string{"gc", "--dry-run"}
	}
	if ok, err := runAdminRepair(ctx, a, mds(), rest); ok {
		return err
	}
	if len(rest) < 2 || rest[0] != "mds" {
		return usageErrorf("admin", "want: mds list | mds add ID RAFT_ADDR | mds remove ID | mds recover | %s", adminRepairUsage)
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		var r *rpc.ClusterResp
		var err error
		switch verb := rest[1]; {
		case verb == "list" && len(rest) == 2:
			r, err = c.Cluster(ctx)
		case verb == "add" && len(rest) == 4:
			r, err = c.AddVoter(ctx, rest[2], rest[3], *force)
		case verb == "remove" && len(rest) == 3:
			r, err = c.RemoveVoter(ctx, rest[2])
		default:
			return usageErrorf("admin", "want: mds list | mds add ID RAFT_ADDR | mds remove ID")
		}
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "MDS\tROLE\tRAFT ADDR\tRPC ADDR")
		for _, v := range r.Voters {
			role := "follower"
			if v.ID == r.Leader {
				role = "leader"
			}
			if !v.Voter {
				role += " (non-voter)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(v.ID), role, printable(v.RaftAddr), printable(v.RPCAddr))
		}
		return tw.Flush()
	})
}
