package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/qos"
)

// qosStatus prints the bandwidth ledger as four tables: data servers,
// traffic by class and job, drains, and served bytes.
func qosStatus(ctx context.Context, w io.Writer, c *client.Client) error {
	st, err := c.QoSStatus(ctx)
	if err != nil {
		return err
	}
	writeQoSStatus(w, st, time.Now())
	return nil
}

func writeQoSStatus(w io.Writer, st *rpc.QoSStatusResp, now time.Time) {
	fmt.Fprintf(w, "policy version %d, capacity %s over %d data servers\n", st.Version, perSecond(st.Capacity), len(st.Measures))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSERVER\tCAPACITY\tDISK READ\tDISK WRITE\tNET RX\tNET TX\tSERVED\tQUEUE WAIT\tDEVICE")
	for _, d := range st.Measures {
		m := d.Measure
		capacity := perSecond(m.Capacity)
		if !m.Configured {
			capacity += " (seen)"
		}
		dev := m.Device
		if dev == "" {
			dev = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, capacity, perSecond(m.DiskRead), perSecond(m.DiskWrite),
			perSecond(m.NetRx), perSecond(m.NetTx), perSecond(m.Served), time.Duration(m.QueueWaitUs)*time.Microsecond, dev)
	}
	fmt.Fprintln(tw, "\nCLASS\tJOB\tDEMAND\tUSE")
	if len(st.Use) == 0 {
		fmt.Fprintln(tw, "-\t-\t0/s\t0/s")
	}
	for _, u := range st.Use {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", qos.Class(u.Class), orDash(u.Job), perSecond(u.Demand), perSecond(u.Use))
	}
	fmt.Fprintln(tw, "\nDRAIN JOB\tBACKLOG\tFILES\tDRAINED\tRATE\tDONE IN\tSTATE")
	if len(st.Drains) == 0 {
		fmt.Fprintln(tw, "-\t0\t0\t0\t0/s\t-\tno drains")
	}
	for _, d := range st.Drains {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Job, humanSize(d.Backlog), d.Files, humanSize(d.Drained), perSecond(d.Rate), doneIn(d, now), drainState(d))
	}
	fmt.Fprintln(tw, "\nSERVER\tPOLICY\tINFLIGHT\tQUEUED\tCLASS\tJOB\tSERVED")
	for _, s := range st.Servers {
		if len(s.Served) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t-\t-\t0\n", s.ID, s.Version, s.Inflight, s.Queued)
		}
		for _, j := range s.Served {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", s.ID, s.Version, s.Inflight, s.Queued, qos.Class(j.Class), orDash(j.Job), humanSize(j.Bytes))
		}
	}
	tw.Flush()
}

func perSecond(n uint64) string { return humanSize(n) + "/s" }

// doneIn is when a drain's backlog should be drained, from now.
func doneIn(d rpc.QoSDrain, now time.Time) string {
	switch {
	case d.Backlog == 0:
		return "0s"
	case d.ETA == 0:
		return "unknown"
	}
	return max(time.Unix(0, d.ETA).Sub(now), 0).Round(time.Second).String()
}

func drainState(d rpc.QoSDrain) string {
	switch {
	case d.Done && d.Backlog == 0:
		return "done"
	case d.Done:
		return "ended, " + strconv.FormatUint(d.Files, 10) + " files not drained"
	case d.Backlog == 0:
		return "idle"
	case d.Rate == 0:
		return "waiting"
	}
	return "draining"
}
