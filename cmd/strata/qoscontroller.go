package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/bwhold"
	"github.com/strata-hpc/strata/internal/slurmrest"
	"github.com/strata-hpc/strata/qos"
)

func runQoSController(ctx context.Context, a *app, args []string) error {
	f := newFlags("qos controller", "", `
Run the drain-bandwidth controller beside slurmctld (docs/qos.md, "Slurm").
Every --interval it reads the queue through slurmrestd (--slurmrestd) and
the global MDS's bandwidth ledger (--mds, with --secret-file): the
bandwidth owed is the running tier jobs' strata_bw licenses plus the drain
backlog spread over --horizon. A pending tier job whose bw= would take it
past the capacity (--capacity, else the capacity the data servers
measured) is held, with the reason in its comment (squeue -o %k, scontrol
show job); it is released, its comment restored, once the backlog clears.
If slurmrestd or the MDS cannot be reached, or slurmrestd refuses it, no
job is touched and that is logged once a minute. It keeps no state: jobs
it holds carry "strata-hold:" in their comment. SIGINT or SIGTERM stops
it. Every key can also come from the environment (STRATA_ + KEY) or a TOML
file.`)
	o := newOptions("qos controller")
	cfg := bwhold.DefaultConfig()
	var mds, secretFile, endpoint, user, tokenFile string
	var capacity uint64
	horizon, logLevel := 10*time.Minute, "info"
	o.str("mds", "the global MDS's `address`(es), comma separated (required)", &mds)
	o.str("secret_file", "the cluster secret `file`, to read the ledger as a node daemon", &secretFile)
	o.str("slurmrestd", "slurmrestd's `endpoint`: unix:/PATH (rest_auth/local) or http://HOST:PORT (rest_auth/jwt) (required)", &endpoint)
	o.str("slurm_user", "the Slurm user `name` sent to slurmrestd (required with a token)", &user)
	o.str("slurm_token_file", "`file` holding the JWT for slurmrestd (scontrol token)", &tokenFile)
	o.size("capacity", "drain bandwidth the global namespace absorbs, bytes per second, a `size` like 20G; 0: what the data servers measured", &capacity)
	o.dur("horizon", "the drain backlog must be absorbable within this `duration`", &horizon)
	o.dur("interval", "`time` between passes", &cfg.Interval)
	o.str("license", "the Slurm license `name` a job's bw= becomes (job_submit.lua)", &cfg.License)
	o.str("log_level", "`level`: debug, info, warn or error", &logLevel)
	log, err := parseDaemon(a, f, o, args, &logLevel)
	if err != nil {
		return err
	}
	switch {
	case mds == "":
		return usageErrorf(f.name, "--mds (or STRATA_MDS) is required")
	case endpoint == "":
		return usageErrorf(f.name, "--slurmrestd is required")
	case horizon < time.Second:
		return usageErrorf(f.name, "--horizon %v: want at least 1s", horizon)
	}
	rcfg := slurmrest.Config{Endpoint: endpoint, UserName: user}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("qos controller: --slurm-token-file: %w", err)
		}
		rcfg.Token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "SLURM_JWT="))
	}
	if err := rcfg.Validate(); err != nil {
		return usageErrorf(f.name, "%v", err)
	}
	rest, err := slurmrest.New(rcfg)
	if err != nil {
		return err
	}
	defer rest.Close()
	ccfg := client.DefaultConfig()
	ccfg.MDS = mds
	if err := clientAuth(a, &ccfg, secretFile); err != nil {
		return err
	}
	cl, err := client.New(ccfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg.Capacity = int64(capacity)
	led := ledgerSource{c: cl, horizon: horizon}
	ctl, err := bwhold.New(cfg, bwhold.Deps{Slurm: rest, Demand: led, Capacity: led, Log: log})
	if err != nil {
		return usageErrorf(f.name, "%v", err)
	}
	log.Info("starting qos controller", "slurmrestd", endpoint, "mds", mds, "capacity", capacity, "horizon", horizon)
	if err := runUntilDone(ctx, log, []string{"qos controller"}, []server{ctl}); err != nil {
		return fmt.Errorf("qos controller: %w", err)
	}
	return nil
}

// ledgerSource reads the controller's demand and capacity from the
// global MDS's bandwidth ledger.
type ledgerSource struct {
	c       *client.Client
	horizon time.Duration
}

var (
	_ bwhold.Demand   = ledgerSource{}
	_ bwhold.Capacity = ledgerSource{}
)

// DrainDemand is the bandwidth that drains the ledger's backlog within
// the horizon.
func (l ledgerSource) DrainDemand(ctx context.Context) (int64, error) {
	st, err := l.c.QoSStatus(ctx)
	if err != nil {
		return 0, err
	}
	var backlog uint64
	for _, d := range st.Drains {
		backlog += d.Backlog
	}
	return qos.BacklogDemand(backlog, l.horizon), nil
}

// DrainCapacity is the capacity of the data servers that are up.
func (l ledgerSource) DrainCapacity(ctx context.Context) (int64, error) {
	st, err := l.c.QoSStatus(ctx)
	if err != nil {
		return 0, err
	}
	if st.Capacity > 1<<62 {
		return 0, errors.New("qos controller: capacity out of range")
	}
	return int64(st.Capacity), nil
}
