package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/layout"
)

func runSetstripe(ctx context.Context, a *app, args []string) error {
	f := newFlags("setstripe", "PATH", `
Set the layout policy of the directory PATH (files created in it afterwards
inherit it, as do new subdirectories) or the layout of the empty file PATH.
Fields not given are inherited from the parent directory, then the cluster
default.

The flags build a layout string; --layout gives one whole, e.g.
  strata setstripe --width 4 --unit 1M /proj
  strata setstripe --layout width=4,unit=1M,scheme=none /proj
Width is the number of data servers a file is striped over (1 to 256, at
most the number of data servers); unit the stripe unit, 4K to 256M in
multiples of 4K; scheme none (mirror:N and rs:K+M are reserved).`)
	width := f.String("width", "", "stripe width: number of data servers (like lfs -c)")
	f.StringVar(width, "c", "", "same as --width")
	unit := f.String("unit", "", "stripe unit, e.g. 64K, 1M (like lfs -S)")
	f.StringVar(unit, "S", "", "same as --unit")
	scheme := f.String("scheme", "", "redundancy scheme: none")
	spec := f.String("layout", "", "a whole layout string, e.g. width=4,unit=1M,scheme=none")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, 1); err != nil {
		return err
	}
	var items []string
	if *spec != "" {
		items = append(items, *spec)
	}
	for _, kv := range []struct{ k, v string }{{"width", *width}, {"unit", *unit}, {"scheme", *scheme}} {
		if kv.v != "" {
			items = append(items, kv.k+"="+kv.v)
		}
	}
	if len(items) == 0 {
		return usageErrorf(f.name, "nothing to set: give --width, --unit, --scheme or --layout")
	}
	s := strings.Join(items, ",")
	// Check the string here too, so a bad one never reaches the MDS and
	// the message names the bad item.
	if _, err := layout.Parse(s); err != nil {
		return opError("setstripe", paths[0], err)
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		return opError("setstripe", paths[0], c.SetLayout(ctx, strataPath(paths[0]), s))
	})
}

func runGetstripe(ctx context.Context, a *app, args []string) error {
	f := newFlags("getstripe", "PATH...", `
Show the layout of each file PATH: its layout string, generation and the
data server of each column; or for a directory the effective policy that
files created in it get.`)
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 1, -1); err != nil {
		return err
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		for i, arg := range paths {
			info, err := c.GetLayout(ctx, strataPath(arg))
			if err != nil {
				return opError("getstripe", arg, err)
			}
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			printLayout(a, info)
		}
		return nil
	})
}

func printLayout(a *app, info *client.LayoutInfo) {
	w := a.stdout
	fmt.Fprintln(w, printable(info.Path))
	if info.Dir {
		spec := info.Spec
		if spec == "" {
			spec = "(cluster default)"
		}
		fmt.Fprintf(w, "policy:     %s\n", spec)
		return
	}
	l := info.Layout
	fmt.Fprintf(w, "layout:     %s\n", info.Spec)
	fmt.Fprintf(w, "width:      %d\n", l.Width)
	fmt.Fprintf(w, "unit:       %s\n", layout.FormatSize(l.Unit))
	fmt.Fprintf(w, "scheme:     %s\n", l.Scheme)
	fmt.Fprintf(w, "generation: %d\n", l.Generation)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tDS\tADDR")
	for i, id := range l.Targets {
		addr := ""
		if i < len(info.Addrs) {
			addr = info.Addrs[i]
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", i, printable(id), printable(addr))
	}
	tw.Flush()
}

func runDf(ctx context.Context, a *app, args []string) error {
	f := newFlags("df", "", `
Show the namespace's size, use and free space, its inode count, and each
data server with its state. Sizes are binary (1K = 1024 bytes) unless
--bytes is given.`)
	bytes := f.Bool("bytes", false, "sizes in bytes")
	mds := f.mdsFlag(a)
	paths, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(paths, 0, 0); err != nil {
		return err
	}
	size := humanSize
	if *bytes {
		size = func(n uint64) string { return strconv.FormatUint(n, 10) }
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		st, err := c.StatFS(ctx)
		if err != nil {
			return opError("df", "/", err)
		}
		cl, err := c.Cluster(ctx)
		if err != nil {
			return opError("df", "/", err)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FILESYSTEM\tSIZE\tUSED\tAVAIL\tUSE%\tINODES\tDATA SERVERS")
		fmt.Fprintf(tw, "strata\t%s\t%s\t%s\t%s\t%d\t%d up of %d\n", size(st.Capacity), size(used(st.Capacity, st.Free)),
			size(st.Free), percent(st.Capacity, st.Free), st.Files, st.DSUp, st.DSTotal)
		tw.Flush()
		fmt.Fprintln(a.stdout)
		tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DS\tNODE\tADDR\tSTATE\tSIZE\tUSED\tAVAIL\tUSE%\tLOAD")
		for _, d := range cl.DataSvrs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\n", printable(d.ID), printable(d.Node), printable(d.Addr), d.State, size(d.Capacity),
				size(used(d.Capacity, d.Free)), size(d.Free), percent(d.Capacity, d.Free), d.Load)
		}
		return tw.Flush()
	})
}

func used(capacity, free uint64) uint64 {
	if free > capacity {
		return 0
	}
	return capacity - free
}

// percent is the used share, rounded up as df does.
func percent(capacity, free uint64) string {
	if capacity == 0 {
		return "-"
	}
	u := used(capacity, free)
	return strconv.FormatUint((u*100+capacity-1)/capacity, 10) + "%"
}
