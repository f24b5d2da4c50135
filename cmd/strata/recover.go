package main

import (
	"fmt"
	"strings"

	"github.com/strata-hpc/strata/daemon/mds"
)

// runMDSRecover is `strata admin mds recover`: raft's manual recovery of
// a stopped replica's directory (mds.Recover), offline.
func runMDSRecover(a *app, dir, voters string, dryRun bool) error {
	if dir == "" {
		return usageErrorf("admin", "mds recover: --dir is required (the stopped replica's data directory)")
	}
	var list []string
	for _, v := range strings.Split(voters, ",") {
		if v = strings.TrimSpace(v); v != "" {
			list = append(list, v)
		}
	}
	if len(list) == 0 && !dryRun {
		return usageErrorf("admin", "mds recover: --voters is required: the surviving replicas, id=raftaddr,...")
	}
	info, err := mds.Recover(dir, list, dryRun, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: last raft index %d, term %d\n", dir, info.LastIndex, info.LastTerm)
	if dryRun {
		return nil
	}
	fmt.Fprintf(a.stdout, "recovered: the voters are now %s; start the MDS on %s (and on every other survivor recovered with the same --voters)\n",
		strings.Join(info.Voters, ","), dir)
	return nil
}
