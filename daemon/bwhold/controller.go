package bwhold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-hpc/strata/internal/slurmrest"
	"github.com/strata-hpc/strata/jobtier"
)

// HoldPrefix starts the comment of every job the controller holds.
const HoldPrefix = "strata-hold: "

// commentWas separates the hold reason from the job's own comment, which
// a release restores.
const commentWas = "; comment was: "

// Slurm is what the controller needs of slurmrestd (*slurmrest.Client).
type Slurm interface {
	Jobs(ctx context.Context) ([]slurmrest.Job, error)
	UpdateJob(ctx context.Context, id uint32, u slurmrest.JobUpdate) error
}

var _ Slurm = (*slurmrest.Client)(nil)

// Demand reports the drain bandwidth, in bytes per second, the global
// namespace owes beyond running jobs: drains of finished jobs still in
// progress (the bandwidth ledger's backlog).
type Demand interface {
	DrainDemand(ctx context.Context) (int64, error)
}

// Capacity reports the drain bandwidth, in bytes per second, the global
// namespace absorbs (the bandwidth ledger's measured capacity; 0: not
// known yet).
type Capacity interface {
	DrainCapacity(ctx context.Context) (int64, error)
}

// errNoCapacity fails a pass before any capacity is known.
var errNoCapacity = errors.New("bwhold: the global namespace's capacity is not known yet")

// Deps of the controller.
type Deps struct {
	Slurm  Slurm
	Demand Demand
	// Capacity is where the capacity comes from when Config.Capacity is
	// 0.
	Capacity Capacity
	Log      *slog.Logger     // nil: discard
	Now      func() time.Time // nil: time.Now
}

// Controller holds and releases tier jobs. Create it with New; Start runs
// passes until Close; Step runs one.
type Controller struct {
	cfg  Config
	deps Deps

	mu      sync.Mutex // guards lastErr, dropped
	lastErr time.Time
	dropped int

	ready  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a controller; it does nothing until Start or Step.
func New(cfg Config, deps Deps) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Slurm == nil || deps.Demand == nil {
		return nil, errors.New("bwhold: Slurm and Demand are required")
	}
	if cfg.Capacity == 0 && deps.Capacity == nil {
		return nil, errors.New("bwhold: a capacity or a capacity source is required")
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	deps.Log = deps.Log.With("component", "bwhold")
	return &Controller{cfg: cfg, deps: deps, ready: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start runs a pass now and then every Config.Interval until Close or
// ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		close(c.ready)
		t := time.NewTicker(c.cfg.Interval)
		defer t.Stop()
		for {
			c.report(c.Step(ctx))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Ready is closed once the first pass has started.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Close stops the passes and waits for the current one.
func (c *Controller) Close() error {
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
	return nil
}

// Step runs one pass. If slurmrestd or the demand source fails, it
// changes nothing and returns the error; the passes Start runs log it at
// most once per Config.ErrorEvery.
func (c *Controller) Step(ctx context.Context) error {
	jobs, err := c.deps.Slurm.Jobs(ctx)
	if err != nil {
		return fmt.Errorf("bwhold: list jobs: %w", err)
	}
	backlog, err := c.deps.Demand.DrainDemand(ctx)
	if err != nil {
		return fmt.Errorf("bwhold: read the drain backlog: %w", err)
	}
	capacity, err := c.capacity(ctx)
	if err != nil {
		return err
	}
	demand := backlog
	var pending []slurmrest.Job
	for _, j := range jobs {
		bw := c.bandwidth(j)
		switch {
		case bw == 0:
		case j.State == "RUNNING" || j.State == "CONFIGURING" || j.State == "COMPLETING":
			demand += bw
		case j.State == "PENDING":
			pending = append(pending, j)
		}
	}
	sort.Slice(pending, func(a, b int) bool { return pending[a].ID < pending[b].ID })
	var errs []error
	for _, j := range pending {
		bw := c.bandwidth(j)
		ours := j.Held() && strings.HasPrefix(j.Comment, HoldPrefix)
		if j.Held() && !ours {
			continue // the user's or an administrator's hold
		}
		if demand > 0 && demand+bw > capacity {
			errs = append(errs, c.hold(ctx, j, ours, demand, bw, capacity))
			continue
		}
		demand += bw
		if ours {
			errs = append(errs, c.release(ctx, j))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bwhold: update jobs: %w", err)
	}
	return nil
}

// bandwidth is the job's drain bandwidth in bytes per second, from its
// licenses ("strata_bw:2,other:1"; older Slurm writes name*count).
func (c *Controller) bandwidth(j slurmrest.Job) int64 {
	for _, l := range strings.Split(j.Licenses, ",") {
		name, n, ok := strings.Cut(l, ":")
		if !ok {
			name, n, ok = strings.Cut(l, "*")
		}
		if ok && name == c.cfg.License {
			if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 && v <= jobtier.MaxLicenses {
				return v * jobtier.LicenseUnit
			}
		}
	}
	return 0
}

// hold holds a pending job, or, if it holds it already (ours), brings
// the reason in its comment up to date.
func (c *Controller) hold(ctx context.Context, j slurmrest.Job, ours bool, demand, bw, capacity int64) error {
	comment := fmt.Sprintf("%swaiting for drain bandwidth: %s in use or owed + %s for this job > %s capacity",
		HoldPrefix, rate(demand), rate(bw), rate(capacity))
	was := j.Comment
	if ours {
		_, was, _ = strings.Cut(j.Comment, commentWas)
	}
	if was != "" {
		comment += commentWas + was
	}
	if ours {
		if j.Comment == comment {
			return nil
		}
		if err := c.deps.Slurm.UpdateJob(ctx, j.ID, slurmrest.JobUpdate{Comment: &comment}); err != nil {
			return fmt.Errorf("comment on job %d: %w", j.ID, err)
		}
		return nil
	}
	t := true
	if err := c.deps.Slurm.UpdateJob(ctx, j.ID, slurmrest.JobUpdate{Hold: &t, Comment: &comment}); err != nil {
		return fmt.Errorf("hold job %d: %w", j.ID, err)
	}
	c.deps.Log.Info("held job", "job_id", j.ID, "demand", demand, "job_bw", bw, "capacity", capacity)
	return nil
}

// capacity is Config.Capacity, or its source's when that is 0.
func (c *Controller) capacity(ctx context.Context) (int64, error) {
	if c.cfg.Capacity > 0 {
		return c.cfg.Capacity, nil
	}
	v, err := c.deps.Capacity.DrainCapacity(ctx)
	if err != nil {
		return 0, fmt.Errorf("bwhold: read the capacity: %w", err)
	}
	if v <= 0 {
		return 0, errNoCapacity
	}
	return v, nil
}

func (c *Controller) release(ctx context.Context, j slurmrest.Job) error {
	_, was, _ := strings.Cut(j.Comment, commentWas)
	f := false
	if err := c.deps.Slurm.UpdateJob(ctx, j.ID, slurmrest.JobUpdate{Hold: &f, Comment: &was}); err != nil {
		return fmt.Errorf("release job %d: %w", j.ID, err)
	}
	c.deps.Log.Info("released job", "job_id", j.ID)
	return nil
}

// report logs a failed pass at most once per Config.ErrorEvery, with how
// many failures it left out.
func (c *Controller) report(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	now := c.deps.Now()
	if !c.lastErr.IsZero() && now.Sub(c.lastErr) < c.cfg.ErrorEvery {
		c.dropped++
		c.mu.Unlock()
		return
	}
	dropped := c.dropped
	c.lastErr, c.dropped = now, 0
	c.mu.Unlock()
	c.deps.Log.Warn("pass failed, jobs left untouched", "err", err,
		"unauthorized", errors.Is(err, slurmrest.ErrUnauthorized), "failures_not_logged", dropped)
}

// rate formats bytes per second for a comment: 2 GiB/s, 1.5 GiB/s, 512 MiB/s.
func rate(n int64) string {
	if n >= jobtier.LicenseUnit {
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/jobtier.LicenseUnit, 'f', 1, 64), ".0") + " GiB/s"
	}
	return strconv.FormatInt(n>>20, 10) + " MiB/s"
}
