package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/mpiio"
)

const mpiioUsage = `Usage: strata mpiio hints|check [flags] [args]

MPI-IO hints for files on Strata (docs/mpiio.md).

  strata mpiio hints --layout SPEC [--nodes N]
  strata mpiio hints --dir PATH [--mds ADDR] [--nodes N]
      Print a ROMIO hints file tuned for files with layout SPEC, or with the
      effective layout policy of the Strata directory PATH, written from N
      nodes. Point ROMIO at it: mpirun -x ROMIO_HINTS=FILE ...

  strata mpiio check KEY=VALUE...
      Say what each MPI-IO hint does on Strata, and fail naming a hint whose
      value Strata would refuse.
`

func runMPIIO(ctx context.Context, a *app, args []string) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "hints":
		return runMPIIOHints(ctx, a, args[1:])
	case "check":
		return runMPIIOCheck(a, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprint(a.stdout, mpiioUsage)
		return flag.ErrHelp
	case "":
		return usageErrorf("mpiio", "want a subcommand: hints or check")
	}
	return usageErrorf("mpiio", "unknown subcommand %q (want hints or check)", sub)
}

func runMPIIOHints(ctx context.Context, a *app, args []string) error {
	f := newFlags("mpiio hints", "", `
Print a ROMIO hints file (one "key value" per line, each with a comment that
says why) for writing files with the layout given by --layout, or with the
effective layout policy of the Strata directory --dir (read from the MDS;
--layout's fields win over it), from --nodes compute nodes:
  strata mpiio hints --layout width=4,unit=1M --nodes 8 > hints.txt
  mpirun -x ROMIO_HINTS=$PWD/hints.txt ./app        # ROMIO: OMPI_MCA_io=romio321
It gives striping_factor and striping_unit matching the layout (ROMIO aligns
collective file domains to striping_unit), cb_buffer_size as whole stripes,
cb_nodes = min(nodes, width), cb_config_list *:1, romio_cb_write=enable and
romio_ds_write=disable. OMPIO ignores the file; the file's comments give the
equivalent OMPI_MCA_io_ompio_* settings.`)
	spec := f.String("layout", "", "layout `string`, e.g. width=4,unit=1M")
	dir := f.String("dir", "", "Strata directory `PATH` whose effective layout policy to use")
	nodes := f.String("nodes", "", "`number` of compute nodes writing (default $SLURM_JOB_NUM_NODES; unknown: no cb_nodes)")
	mds := f.mdsFlag(a)
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 0, 0); err != nil {
		return err
	}
	if *spec == "" && *dir == "" {
		return usageErrorf(f.name, "give --layout or --dir")
	}
	n, err := nodeCount(a, *nodes)
	if err != nil {
		return usageErrorf(f.name, "%v", err)
	}
	p, err := layout.Parse(*spec)
	if err != nil {
		return usageErrorf(f.name, "--layout %q: %s", *spec, reason(err))
	}
	if *dir != "" {
		err := withClient(ctx, a, mds(), func(c *client.Client) error {
			info, err := c.GetLayout(ctx, strataPath(*dir))
			if err != nil {
				return err
			}
			if !info.Dir {
				return errors.New("not a directory")
			}
			pol, err := layout.Parse(info.Spec)
			if err != nil {
				return err
			}
			p = p.Inherit(pol)
			return nil
		})
		if err != nil {
			return opError("mpiio hints", *dir, err)
		}
	}
	_, err = fmt.Fprint(a.stdout, mpiio.ROMIOHintsFile(p, n))
	return err
}

// nodeCount is --nodes, else $SLURM_JOB_NUM_NODES (set in a Slurm job),
// else 0 for unknown.
func nodeCount(a *app, flagValue string) (int, error) {
	v, what := flagValue, "--nodes"
	if v == "" {
		v, what = a.env("SLURM_JOB_NUM_NODES"), "$SLURM_JOB_NUM_NODES"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q: want a number of nodes, 1 or more", what, v)
	}
	return n, nil
}

func runMPIIOCheck(a *app, args []string) error {
	f := newFlags("mpiio check", "KEY=VALUE...", `
Say what each MPI-IO hint does on Strata: striping_factor, striping_unit and
strata_scheme set the layout of a file the job creates (with
libstrata_mpiio.so loaded, see docs/mpiio.md); every other hint is passed to
the MPI-IO layer. Fails, naming the hint, if Strata would refuse a value:
  strata mpiio check striping_factor=4 striping_unit=1048576 cb_nodes=2`)
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 1, -1); err != nil {
		return err
	}
	hints := map[string]string{}
	for _, kv := range rest {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf(f.name, "%q: want KEY=VALUE", kv)
		}
		hints[k] = v
	}
	p, err := mpiio.Layout(hints)
	if err != nil {
		return fmt.Errorf("mpiio check: %w", err)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	for _, e := range mpiio.Explain(hints) {
		fmt.Fprintf(tw, "%s=%s\t%s\n", e.Key, e.Value, e.Does)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.IsZero() {
		_, err = fmt.Fprintln(a.stdout, "layout: the directory's (no layout hints)")
	} else {
		_, err = fmt.Fprintf(a.stdout, "layout: %s (fields not given: the directory's)\n", p)
	}
	return err
}
