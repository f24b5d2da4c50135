package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/strata-hpc/strata/daemon/agent"
	"github.com/strata-hpc/strata/internal/capability"
)

func runAgent(ctx context.Context, a *app, args []string) error {
	f := newFlags("agent", "", `
Run the node agent of a Slurm compute node (one per node, as root, under
systemd: contrib/systemd/strata-agent.service). The SPANK plugin calls it
over the root-only unix socket --socket in every job's prolog and epilog:
for a job with --storage-tier it runs the job tier's data server on this
node (on --nvme-dir), the tier's MDS on the job's first node, mounts the
tier at the same path on every node, stages data in, drains checkpoints
to the global namespace (--global-mds, with its --secret-file) and records
the tier in the global MDS's registry. Restarting it does not disturb
running tiers: their daemons are separate processes, which the new agent
adopts from --state-dir. Every key can also come from the environment or a
TOML file (see docs/agent.md); flags win over the environment, which wins
over the file. SIGINT or SIGTERM stops it, leaving tiers running.`)
	cfg := agent.DefaultConfig()
	host, _ := os.Hostname()
	cfg.Node, _, _ = strings.Cut(host, ".")
	secretFile, logLevel, nodeAddrs, mountPrefix := "", "info", "", "/mnt/strata-tier"
	var drainRate uint64
	o := newOptions("agent")
	o.str("socket", "unix socket `path` the SPANK plugin calls (mode 0600)", &cfg.Socket)
	o.str("node", "this node's Slurm `name` (default: the short host name)", &cfg.Node)
	o.str("state_dir", "`directory` of the tiers' state, logs and MDS data", &cfg.StateDir)
	o.str("hints_dir", "`directory` of the tiers' ROMIO hints files (world-readable)", &cfg.HintsDir)
	o.str("nvme_dir", "node-local storage `directory` the tier data servers use", &cfg.NVMeDir)
	o.str("global_mds", "the global namespace's MDS `address`(es), comma separated (required)", &cfg.GlobalMDS)
	o.str("secret_file", "the global namespace's cluster secret `file` (required)", &secretFile)
	o.str("addr", "this node's IP `address`, where its tier daemons listen (required)", &cfg.Addr)
	o.str("node_addrs", "node addresses, `NAME=IP,...`; others are looked up with scontrol show node", &nodeAddrs)
	o.str("mount_prefix", "`directory` tiers are mounted in, as PREFIX/JOBID", &mountPrefix)
	o.str("allowed_mount_prefix", "`directory` below which a spec's mount= may put a tier (default: refused)", &cfg.Tier.AllowedMountPrefix)
	o.str("strata", "the strata `binary` tier daemons run (default: this one)", &cfg.Strata)
	o.int("port_base", "tier MDS `port`s start here: base + 2 x (job id mod port-slots), or a later free pair", &cfg.PortBase)
	o.int("port_slots", "`number` of tier MDS port pairs", &cfg.PortSlots)
	o.size("default_capacity", "tier `size` per node when the spec gives none; 0: the NVMe file system's", &cfg.DefaultCapacity)
	o.size("drain_rate", "bytes per second this node drains at most, a `size` like 500M; 0: no cap", &drainRate)
	o.int("drain_workers", "`files` drained at once", &cfg.DrainWorkers)
	o.dur("drain_settle", "a file is drained once its size and mtime held this `long`", &cfg.DrainSettle)
	o.dur("scan_interval", "how `often` the tier is scanned for files to drain", &cfg.ScanInterval)
	o.int("stage_workers", "`pieces` staged in at once", &cfg.StageWorkers)
	o.dur("ready_timeout", "a prolog waits this `long` for the tier's MDS and data servers", &cfg.ReadyTimeout)
	o.dur("epilog_timeout", "the final drain's time `budget` (keep it under plugstack.conf timeout=)", &cfg.EpilogTimeout)
	o.dur("after_job_timeout", "how `long` after its job a tier is kept to drain what the epilog could not", &cfg.AfterJobTimeout)
	o.str("log_level", "`level`: debug, info, warn or error", &logLevel)
	log, err := parseDaemon(a, f, o, args, &logLevel)
	if err != nil {
		return err
	}
	if cfg.NodeAddrs, err = agent.ParseNodeAddrs(nodeAddrs); err != nil {
		return usageErrorf("agent", "--node-addrs: %v", err)
	}
	if !filepath.IsAbs(mountPrefix) {
		return usageErrorf("agent", "--mount-prefix %q: want an absolute directory", mountPrefix)
	}
	cfg.Tier.DefaultMount = filepath.Join(mountPrefix, "%j")
	cfg.DrainRate = int64(drainRate)
	if cfg.Strata == "" {
		if cfg.Strata, err = os.Executable(); err != nil {
			return fmt.Errorf("agent: the strata binary: %w", err)
		}
	}
	if secretFile == "" {
		return usageErrorf("agent", "--secret-file is required (the global MDS's secret file)")
	}
	if cfg.Secret, err = capability.ReadSecretFile(secretFile); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageErrorf("agent", "%v", err)
	}
	s, err := agent.New(cfg, agent.Deps{Log: log})
	if err != nil {
		return err
	}
	log.Info("starting agent", "node", cfg.Node, "socket", cfg.Socket, "addr", cfg.Addr, "global_mds", cfg.GlobalMDS)
	if err := runUntilDone(ctx, log, []string{"agent"}, []server{s}); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}
