package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/strata-hpc/strata/jobtier"
)

const tierUsage = `Usage: strata tier validate|status|drain [flags] ...

Job tiers: a private file system made of a Slurm job's own nodes
(sbatch --storage-tier=SPEC, see docs/storage-tier.md).

  strata tier validate [--allowed-mount-prefix P] [--default-mount M] [-v] SPEC
      Check a --storage-tier value. Exit 0 when it is valid (with -v, print
      its canonical form); else print one line naming the offending item on
      stderr and exit 1. The SPANK plugin runs this at submit time, so that
      sbatch, srun and salloc fail before anything is queued. It needs no
      MDS and takes no --mds.

  strata tier status [--json] [JOBID]
      The tiers the global MDS's registry keeps: a table, or one in full.

  strata tier drain [--wait] [--timeout D] PATH...
      From inside a job: whether files of its tier are drained; with
      --wait, block until they are.
`

func runTier(ctx context.Context, a *app, args []string) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "validate":
		return runTierValidate(a, args[1:])
	case "status":
		return runTierStatus(ctx, a, args[1:])
	case "drain":
		return runTierDrain(ctx, a, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprint(a.stdout, tierUsage)
		return flag.ErrHelp
	case "":
		return usageErrorf("tier", "want a subcommand: validate, status or drain")
	}
	return usageErrorf("tier", "unknown subcommand %q (want validate, status or drain)", sub)
}

func runTierValidate(a *app, args []string) error {
	f := newFlags("tier validate", "SPEC", `
Check the --storage-tier value SPEC against the grammar and the cluster's
rules. Exit 0 when it is valid (with -v, print its canonical form on
stdout); else print the one-line reason, naming the offending item, on
stderr and exit 1:
  strata tier validate 'capacity=200G,stage-in=strata:/ds/imagenet:/in,drain=ckpt/*:strata:/proj/run42'
The SPANK plugin (spank_strata.so) runs this at submit time, as its
plugstack.conf strata=, mount_prefix= and default_mount= arguments say. It needs no MDS and
takes no --mds. See docs/storage-tier.md.`)
	prefix := f.String("allowed-mount-prefix", "", "directory `P` below which mount= may put a tier (default: mount= is refused)")
	defMount := f.String("default-mount", jobtier.DefaultOptions().DefaultMount, "where the cluster mounts a tier without mount=, `M` (%j: the job id), for messages")
	verbose := f.Bool("v", false, "print the canonical form of a valid SPEC")
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 1, 1); err != nil {
		return err
	}
	opts := jobtier.DefaultOptions()
	opts.AllowedMountPrefix = *prefix
	if err := opts.Validate(); err != nil {
		return usageErrorf(f.name, "--allowed-mount-prefix: %v", err)
	}
	opts.DefaultMount = *defMount
	if err := opts.Validate(); err != nil {
		return usageErrorf(f.name, "--default-mount: %v", err)
	}
	spec, err := jobtier.Parse(rest[0])
	if err == nil {
		err = opts.Check(spec)
	}
	var se *jobtier.SpecError
	if errors.As(err, &se) {
		// The grammar's line as it is: sbatch prints it after "error: ".
		fmt.Fprintln(a.stderr, oneLine(se.Error()))
		return errReported{err}
	}
	if err != nil {
		return err
	}
	if *verbose {
		_, err = fmt.Fprintln(a.stdout, spec)
	}
	return err
}
