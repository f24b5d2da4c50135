package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/admin"
	"github.com/strata-hpc/strata/jobtier"
)

// Extended attributes the node agent keeps on a tier (daemon/agent).
const (
	tierMetaXattr  = "user.strata.tier"        // on the tier's root: {"job","spec","mount"}
	drainedXattr   = "user.strata.drained"     // on a drained file: "MTIME SIZE CRC32C DEST"
	drainErrXattr  = "user.strata.drain_error" // on a file that could not be drained: "MTIME SIZE MESSAGE"
	drainWaitPoll  = 200 * time.Millisecond    // how often drain --wait looks
	tierStatusTime = "2006-01-02 15:04:05 MST" // time format of tier status
)

func runTierStatus(ctx context.Context, a *app, args []string) error {
	f := newFlags("tier status", "[JOBID]", `
Show the job tiers the global namespace's registry keeps, during and after
their jobs: without JOBID a table of all of them, with JOBID one tier in
full (nodes, capacity, stage-in and drain progress and rates, errors, the
files that were lost). --json prints what the admin API's GET /v1/tiers
answers.`)
	mds := f.mdsFlag(a)
	asJSON := f.Bool("json", false, "print JSON")
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 0, 1); err != nil {
		return err
	}
	var job uint64
	if len(rest) == 1 {
		if job, err = strconv.ParseUint(rest[0], 10, 32); err != nil || job == 0 {
			return usageErrorf(f.name, "JOBID %q is not a job id", rest[0])
		}
	}
	return withClient(ctx, a, mds(), func(c *client.Client) error {
		if job != 0 {
			r, err := c.Tier(ctx, uint32(job))
			if err != nil {
				if errors.Is(err, syscall.ENOENT) {
					return fmt.Errorf("no tier recorded for job %d", job)
				}
				return err
			}
			b := admin.NewTierBody(r)
			if *asJSON {
				return printJSON(a, b)
			}
			printTier(a, &b)
			return nil
		}
		rs, err := c.Tiers(ctx)
		if err != nil {
			return err
		}
		bodies := make([]admin.TierBody, 0, len(rs))
		for i := range rs {
			bodies = append(bodies, admin.NewTierBody(&rs[i]))
		}
		if *asJSON {
			return printJSON(a, bodies)
		}
		w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "JOB\tSTATE\tNODES\tCAPACITY/NODE\tSTAGED\tDRAINED\tLOST\tERRORS\tCREATED\tRUNS\tSLURM")
		for _, b := range bodies {
			fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", b.Job, printable(b.State), len(b.Nodes), humanSize(b.Capacity),
				humanSize(b.StagedBytes), humanSize(b.DrainedBytes), len(b.Lost), len(b.Errors), fmtTime(b.Created),
				len(b.Runs)+1, orDash(printable(b.JobState)))
		}
		return w.Flush()
	})
}

func printJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTier prints one tier in full.
func printTier(a *app, b *admin.TierBody) {
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "job\t%d\n", b.Job)
	fmt.Fprintf(w, "state\t%s\n", printable(b.State))
	fmt.Fprintf(w, "job state\t%s\n", orDash(printable(b.JobState)))
	if len(b.Runs) > 0 {
		fmt.Fprintf(w, "run\t%d (requeued: %d earlier runs below)\n", b.Run, len(b.Runs))
	}
	fmt.Fprintf(w, "user\tuid %d gid %d\n", b.UID, b.GID)
	fmt.Fprintf(w, "nodes\t%s\n", printables(b.Nodes, ","))
	fmt.Fprintf(w, "capacity\t%s per node\n", humanSize(b.Capacity))
	fmt.Fprintf(w, "spec\t%s\n", printable(b.Spec))
	fmt.Fprintf(w, "mount\t%s\n", printable(b.MountPath))
	fmt.Fprintf(w, "created\t%s\n", fmtTime(b.Created))
	if b.Ended != nil {
		fmt.Fprintf(w, "ended\t%s\n", fmtTime(b.Ended))
	}
	fmt.Fprintf(w, "staged in\t%s in %d files, %s/s\n", humanSize(b.StagedBytes), b.StagedFiles, humanSize(uint64(b.StageRate)))
	fmt.Fprintf(w, "drained\t%s in %d files, %s/s\n", humanSize(b.DrainedBytes), b.DrainedFiles, humanSize(uint64(b.DrainRate)))
	fmt.Fprintf(w, "lost files\t%d\n", len(b.Lost))
	w.Flush()
	for _, l := range b.Lost {
		fmt.Fprintf(a.stdout, "  lost: %s\n", printable(l))
	}
	for _, e := range b.Errors {
		fmt.Fprintf(a.stdout, "  error: %s\n", printable(e))
	}
	if b.Dropped > 0 {
		fmt.Fprintf(a.stdout, "  (%d more errors or lost files not kept)\n", b.Dropped)
	}
	for i := range b.Runs {
		r := &b.Runs[i]
		fmt.Fprintf(a.stdout, "earlier run %d: %s, job state %s, created %s, ended %s, staged %s in %d files, drained %s in %d files, lost %d, errors %d\n",
			r.Run, printable(r.State), orDash(printable(r.JobState)), fmtTime(r.Created), fmtTime(r.Ended),
			humanSize(r.StagedBytes), r.StagedFiles, humanSize(r.DrainedBytes), r.DrainedFiles, len(r.Lost), len(r.Errors))
		for _, l := range r.Lost {
			fmt.Fprintf(a.stdout, "  lost: %s\n", printable(l))
		}
		for _, e := range r.Errors {
			fmt.Fprintf(a.stdout, "  error: %s\n", printable(e))
		}
	}
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(tierStatusTime)
}

func runTierDrain(ctx context.Context, a *app, args []string) error {
	f := newFlags("tier drain", "PATH...", `
From inside a job: say whether files of the job's tier ($STRATA_TIER_DIR)
are safe in their drain destination, the version you see now. With --wait
block until they are (or until a drain fails, or --timeout):
  strata tier drain --wait $STRATA_TIER_DIR/ckpt/step-100
Every PATH is looked at, also after one failed: each failure is printed
with its reason. Exit 0 when every PATH is drained. The node agent drains a file matching a
drain rule once its writers have closed it; it marks the drained version
with the extended attribute user.strata.drained, which this reads through
the tier's mount: no privilege and no MDS address are needed.`)
	wait := f.Bool("wait", false, "block until every PATH is drained")
	timeout := f.Duration("timeout", 0, "give up waiting after this long (0: never)")
	rest, err := f.parse(a, args)
	if err != nil {
		return err
	}
	if err := f.nargs(rest, 1, -1); err != nil {
		return err
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	// Every PATH is looked at, failures or not: each failure is printed,
	// and the exit status says whether any PATH is not drained.
	failed := 0
	var last error
	for _, p := range rest {
		err := drainOne(ctx, a, p, *wait)
		if err == nil {
			continue
		}
		failed++
		last = err
		var done errReported
		if !errors.As(err, &done) {
			fmt.Fprintln(a.stderr, "strata: "+describe(err))
		}
	}
	switch {
	case failed == 0:
		return nil
	case len(rest) > 1:
		return errReported{fmt.Errorf("%d of %d paths not drained: %w", failed, len(rest), last)}
	}
	return errReported{last}
}

// drainOne reports (and with wait, waits for) the drain of one tier file.
func drainOne(ctx context.Context, a *app, p string, wait bool) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	root, spec, err := findTierRoot(filepath.Dir(abs))
	if err != nil {
		return opError("tier drain", p, err)
	}
	rel, _ := filepath.Rel(root, abs)
	dest, ok := spec.DrainTarget(filepath.ToSlash(rel))
	if !ok {
		var rules []string
		for _, d := range spec.Drain {
			rules = append(rules, d.Glob)
		}
		return opError("tier drain", p, fmt.Errorf("no drain rule of this job matches %s (rules: %s)", rel, strings.Join(rules, ", ")))
	}
	for {
		fi, err := os.Stat(abs)
		if err != nil {
			return opError("tier drain", p, err)
		}
		version := fmt.Sprintf("%d %d ", fi.ModTime().UnixNano(), fi.Size())
		if v, err := getXattr(abs, drainedXattr); err == nil && strings.HasPrefix(v, version) {
			fmt.Fprintf(a.stdout, "%s: drained to %s\n", printable(p), printable(dest.String()))
			return nil
		}
		if v, err := getXattr(abs, drainErrXattr); err == nil && strings.HasPrefix(v, version) {
			return opError("tier drain", p, errors.New(strings.TrimPrefix(v, version)))
		}
		if !wait {
			fmt.Fprintf(a.stdout, "%s: not drained yet (to %s)\n", printable(p), printable(dest.String()))
			return errReported{errors.New("not drained")}
		}
		t := time.NewTimer(drainWaitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return opError("tier drain", p, fmt.Errorf("not drained yet: %w", ctx.Err()))
		case <-t.C:
		}
	}
}

// findTierRoot finds the root of the job tier that dir is in: the
// nearest directory up that holds the tier's xattr, and its spec.
func findTierRoot(dir string) (string, jobtier.Spec, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if v, err := getXattr(d, tierMetaXattr); err == nil {
			var meta struct {
				Spec string `json:"spec"`
			}
			if err := json.Unmarshal([]byte(v), &meta); err != nil {
				return "", jobtier.Spec{}, fmt.Errorf("tier root %s: %w", d, err)
			}
			spec, err := jobtier.Parse(meta.Spec)
			return d, spec, err
		}
		if d == "/" {
			return "", jobtier.Spec{}, errors.New("not in a job tier (run it on a path below $STRATA_TIER_DIR)")
		}
	}
}

func getXattr(p, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(p, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
