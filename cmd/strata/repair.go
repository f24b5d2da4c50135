package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// The failure-handling verbs of `strata admin`: rebuild status, scrub
// start|status, ds list|add|drain|undrain. A data server is added by
// starting it (`strata ds --id ID --mds ...`): its first heartbeat
// registers it, and the MDS rebalances data onto it (daemon/mds/rebalance.go).

// adminRepairUsage is the synopsis of the verbs below.
const adminRepairUsage = "rebuild status | scrub start|status | ds list | ds add ADDR | ds drain ID | ds undrain ID | gc [--dry-run]"

// runAdminRepair runs one failure-handling verb against the MDS at addr;
// ok is false if rest is not one of them.
func runAdminRepair(ctx context.Context, a *app, addr string, rest []string) (ok bool, err error) {
	verb := strings.Join(rest, " ")
	var fn func(c *client.Client) error
	switch {
	case verb == "rebuild status":
		fn = func(c *client.Client) error {
			r, err := c.RebuildStatus(ctx)
			if err != nil {
				return err
			}
			return printRebuild(a.stdout, r)
		}
	case verb == "scrub start" || verb == "scrub status":
		fn = func(c *client.Client) error {
			get := c.ScrubStatus
			if rest[1] == "start" {
				get = c.ScrubStart
			}
			r, err := get(ctx)
			if err != nil {
				return err
			}
			return printScrub(a.stdout, r)
		}
	case verb == "gc" || verb == "gc --dry-run":
		fn = func(c *client.Client) error {
			r, err := c.GCScan(ctx, verb != "gc")
			if err != nil {
				return err
			}
			return printGC(a.stdout, r)
		}
	case verb == "ds list":
		fn = func(c *client.Client) error {
			r, err := c.ListDS(ctx)
			if err != nil {
				return err
			}
			return printDS(a.stdout, r)
		}
	case len(rest) == 3 && rest[0] == "ds" && (rest[1] == "drain" || rest[1] == "undrain"):
		fn = func(c *client.Client) error {
			r, err := c.DrainDS(ctx, rest[2], rest[1] == "undrain")
			if err != nil {
				return err
			}
			return printDS(a.stdout, r)
		}
	case len(rest) == 3 && rest[0] == "ds" && rest[1] == "add":
		fn = func(c *client.Client) error {
			jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			d, err := c.JoinDS(jctx, rest[2])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s joined at %s (node %s): up, %s free of %s; new files are placed on it, and existing\n"+
				"data moves onto it in the background while the data servers' fills differ by more than the MDS's\n"+
				"rebalance_spread ('strata admin rebuild status' shows the moves, 'strata admin ds list' the fills)\n",
				printable(d.ID), printable(d.Addr), printable(d.Node), size(d.Free), size(d.Capacity))
			return nil
		}
	case len(rest) >= 1 && (rest[0] == "rebuild" || rest[0] == "scrub" || rest[0] == "ds"):
		return true, usageErrorf("admin", "want: %s", adminRepairUsage)
	default:
		return false, nil
	}
	return true, withClient(ctx, a, addr, fn)
}

func size(n uint64) string { return layout.FormatSize(int64(min(n, 1<<62))) }

// printRebuild prints the rebuild manager's state: a summary, then one
// line per component.
func printRebuild(w io.Writer, r *rpc.RebuildStatusResp) error {
	fmt.Fprintf(w, "rebuild: %d running, %d queued, %d waiting, %d blocked; %d done, %d failed attempts since this MDS leads\n",
		r.Running, r.Queued, r.Waiting, r.Blocked, r.Done, r.Failed)
	limit := "unlimited"
	if r.RateLimit > 0 {
		limit = size(r.RateLimit) + "/s"
	}
	eta := "-"
	if r.ETASeconds > 0 {
		eta = (time.Duration(r.ETASeconds) * time.Second).String()
	}
	fmt.Fprintf(w, "bytes: %s written, %s left, %s/s (limit %s), ETA %s\n", size(r.BytesDone), size(r.BytesLeft), size(uint64(r.Rate)), limit, eta)
	if r.Unrecovered > 0 {
		fmt.Fprintf(w, "%d component(s) have no redundancy left to rebuild from: they wait for their data server\n", r.Unrecovered)
	}
	if len(r.Tasks) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nINODE\tPATH\tCOMP\tFROM\tTO\tREASON\tSTATE\tPROGRESS\tDETAIL")
	for _, t := range r.Tasks {
		path := t.Path
		if path == "" {
			path = "-"
		}
		to := t.To
		if to == "" {
			to = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s/%s\t%s\n", t.Ino, printable(path), t.Comp, printable(t.From), printable(to), t.Reason, t.State, size(t.Bytes), size(t.Size), printable(t.Detail))
	}
	return tw.Flush()
}

// printScrub prints every data server's scrub progress and the damaged
// components.
func printScrub(w io.Writer, r *rpc.ScrubStatusResp) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DS\tSTATE\tPASSES\tCOMPONENTS\tBYTES\tBAD BLOCKS\tLAST PASS DONE\tRATE")
	for _, d := range r.DataSvrs {
		last := "-"
		if d.PassEnd > 0 {
			last = time.Unix(0, d.PassEnd).Format(time.DateTime)
		}
		rate := "unlimited"
		if d.Rate > 0 {
			rate = size(d.Rate) + "/s"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\n", printable(d.ID), d.State, d.Passes, d.Components, size(d.Bytes), d.BadBlocks, last, rate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	list := func(title string, bs []rpc.DamagedBlocks) error {
		if len(bs) == 0 {
			return nil
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INODE\tPATH\tLAYOUT\tCOMP\tDS\tBLOCKS\tFOUND")
		for _, b := range bs {
			path := b.Path
			if path == "" {
				path = "-"
			}
			blocks := fmt.Sprint(b.Blocks)
			if len(b.Blocks) > 8 {
				blocks = fmt.Sprintf("%v... (%d)", b.Blocks[:8], len(b.Blocks))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s of %s\t%s\n", b.Ino, printable(path), printable(b.Layout), b.Col, printable(b.DS), blocks, size(uint64(b.BlockSize)), time.Unix(0, b.Found).Format(time.DateTime))
		}
		return tw.Flush()
	}
	if err := list("being repaired from redundancy", r.Repairing); err != nil {
		return err
	}
	if err := list("UNRECOVERABLE: no redundancy to repair from; reads of these blocks fail with EIO", r.Unrecoverable); err != nil {
		return err
	}
	if len(r.Unrecoverable) == 0 {
		fmt.Fprintln(w, "\nno unrecoverable blocks")
	}
	return nil
}

// printDS prints the data servers with what they hold.
func printDS(w io.Writer, r *rpc.DSListResp) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DS\tSTATE\tNODE\tADDR\tCOMPONENTS\tSTALE\tBYTES\tFREE\tFILL\tLOAD")
	for _, d := range r.DataSvrs {
		state := d.Info.State
		switch {
		case d.Draining && d.Components == 0:
			state += ", drained"
		case d.Draining:
			state += ", draining"
		}
		fill := "-"
		if c := d.Info.Capacity; c > 0 {
			fill = fmt.Sprintf("%.0f%%", 100*float64(c-min(d.Info.Free, c))/float64(c))
		}
		node := printable(d.Info.Node)
		if d.Info.Rack != "" {
			node += " (rack " + printable(d.Info.Rack) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%.1f\n", printable(d.Info.ID), state, node, printable(d.Info.Addr), d.Components, d.Stale, size(d.Bytes), size(d.Info.Free), fill, d.Info.Load)
	}
	return tw.Flush()
}

// repairOptions adds the MDS keys of failure handling (docs/config.md).
func repairOptions(o *options, cfg *mds.Config) {
	o.dur("rebuild_delay", "how long a data server may be down (a `duration`) before its components are rebuilt elsewhere", &cfg.RebuildDelay)
	o.rate("rebuild_rate", "bytes per second all rebuilds together may write, a `size` like 128M, or unlimited", &cfg.RebuildRate)
	o.int("rebuild_parallel", "components rebuilt at once (a `number`)", &cfg.RebuildParallel)
	o.add("rebuild_yield_load", "rebuilds pause while a data server they use has more foreground calls in flight than this `number`", strconv.FormatFloat(cfg.RebuildYieldLoad, 'g', -1, 64), func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("%q is not a non-negative number", v)
		}
		cfg.RebuildYieldLoad = f
		return nil
	})
	o.add("rebalance_spread", "move data between data servers whose fills differ by more than this `fraction` (like 0.1 or 10%), or off", strconv.FormatFloat(cfg.RebalanceSpread, 'g', -1, 64), func(v string) error {
		if v == "off" {
			cfg.RebalanceSpread = -1
			return nil
		}
		scale := 1.0
		if p, ok := strings.CutSuffix(v, "%"); ok {
			v, scale = p, 0.01
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f*scale <= 0 || f*scale > 1 {
			return fmt.Errorf("%q is not a fraction in (0, 1], a percentage like 10%%, or off", v)
		}
		cfg.RebalanceSpread = f * scale
		return nil
	})
}

// scrubOptions adds the data server keys of scrub (docs/config.md).
func scrubOptions(o *options, cfg *ds.Config) {
	o.dur("scrub_interval", "a scrub pass starts this often (a `duration`); negative: only on demand ('strata admin scrub start')", &cfg.ScrubInterval)
	o.rate("scrub_rate", "bytes per second a scrub pass reads at most, a `size` like 32M, or unlimited", &cfg.ScrubRate)
}

// rate adds a key of bytes per second: a size, or "unlimited" (stored as -1).
func (o *options) rate(key, help string, p *int64) {
	def := "unlimited"
	if *p > 0 {
		def = layout.FormatSize(*p)
	}
	o.add(key, help, def, func(v string) error {
		if v == "unlimited" {
			*p = -1
			return nil
		}
		n, err := layout.ParseSize(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a rate like 128M or unlimited", v)
		}
		*p = n
		return nil
	})
}

// printGC prints a GC scan's report: per data server what it scanned,
// then each component no inode references.
func printGC(w io.Writer, r *rpc.GCReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DS\tSTATE\tCOMPONENTS\tBYTES\tERROR")
	for _, d := range r.DataSvrs {
		e := d.Err
		if e == "" {
			e = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", printable(d.ID), d.State, d.Components, size(d.Bytes), oneLine(e))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nunreferenced: %d component(s), %s; ", r.Found, size(r.FoundBytes))
	if r.DryRun {
		fmt.Fprintln(w, "dry run: nothing removed")
	} else {
		fmt.Fprintf(w, "removed %d, %s\n", r.Removed, size(r.RemovedBytes))
	}
	if len(r.Orphans) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nDS\tCOMPONENT\tSIZE\tWHY\tREMOVED")
	for _, o := range r.Orphans {
		removed := "yes"
		switch {
		case r.DryRun:
			removed = "no (dry run)"
		case !o.Removed:
			removed = "no: " + oneLine(o.Err)
		}
		fmt.Fprintf(tw, "%s\t%d.%d.%d\t%s\t%s\t%s\n", printable(o.DS), o.ID.Ino, o.ID.Gen, o.ID.Col, size(o.Size), printable(o.Reason), removed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := r.Found - uint64(len(r.Orphans)); n > 0 {
		fmt.Fprintf(w, "(%d more not listed)\n", n)
	}
	return nil
}
