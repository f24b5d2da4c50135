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
	if len(args) > 0 && args[0] == "cleanup" {
		return runAgentCleanup(ctx, a, args[1:])
	}
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
adopts from --state-dir; the tiers of jobs that ended while it was down
are torn down. Every key can also come from the environment or a TOML
file (see docs/agent.md); flags win over the environment, which wins over
the file. SIGINT or SIGTERM stops it, leaving tiers running.

  strata agent cleanup [AGENT FLAGS] [--force] JOBID
      tear down the tier of a job whose epilog never reached this node's
      agent (see strata agent cleanup --help).`)
	af := newAgentFlags()
	log, err := parseDaemon(a, f, af.o, args, &af.logLevel)
	if err != nil {
		return err
	}
	cfg, err := af.config()
	if err != nil {
		return err
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

// agentFlags are the agent's keys, for the agent and for agent cleanup
// (which must find the same socket and directories).
type agentFlags struct {
	o                                            *options
	cfg                                          agent.Config
	logLevel, secretFile, nodeAddrs, mountPrefix string
	drainRate, stageRate                         uint64
}

// newAgentFlags declares the agent's keys.
func newAgentFlags() *agentFlags {
	af := &agentFlags{o: newOptions("agent"), cfg: agent.DefaultConfig(), logLevel: "info", mountPrefix: "/mnt/strata-tier"}
	cfg, o := &af.cfg, af.o
	host, _ := os.Hostname()
	cfg.Node, _, _ = strings.Cut(host, ".")
	o.str("socket", "unix socket `path` the SPANK plugin calls (mode 0600)", &cfg.Socket)
	o.str("node", "this node's Slurm `name` (default: the short host name)", &cfg.Node)
	o.str("state_dir", "`directory` of the tiers' state, logs and MDS data", &cfg.StateDir)
	o.str("hints_dir", "`directory` of the tiers' ROMIO hints files (world-readable)", &cfg.HintsDir)
	o.str("nvme_dir", "node-local storage `directory` the tier data servers use", &cfg.NVMeDir)
	o.str("global_mds", "the global namespace's MDS `address`(es), comma separated (required)", &cfg.GlobalMDS)
	o.str("secret_file", "the global namespace's cluster secret `file` (required)", &af.secretFile)
	o.str("munge_socket", "munged's `socket`, which the tiers' MDSes verify users' MUNGE credentials with", &af.cfg.MungeSocket)
	tlsOptions(o, &cfg.GlobalTLS, false)
	o.str("addr", "this node's IP `address`, where its tier daemons listen (required)", &cfg.Addr)
	o.str("node_addrs", "node addresses, `NAME=IP,...`; others are looked up with scontrol show node", &af.nodeAddrs)
	o.str("mount_prefix", "`directory` tiers are mounted in, as PREFIX/JOBID", &af.mountPrefix)
	o.str("allowed_mount_prefix", "`directory` below which a spec's mount= may put a tier (default: refused)", &cfg.Tier.AllowedMountPrefix)
	o.str("strata", "the strata `binary` tier daemons run (default: this one)", &cfg.Strata)
	o.int("port_base", "tier MDS `port`s start here: base + 2 x (job id mod port-slots), or a later free pair", &cfg.PortBase)
	o.int("port_slots", "`number` of tier MDS port pairs", &cfg.PortSlots)
	o.size("default_capacity", "tier `size` per node when the spec gives none; 0: all the NVMe has free", &cfg.DefaultCapacity)
	o.size("drain_rate", "bytes per second this node drains at most, a `size` like 500M; 0: no cap", &af.drainRate)
	o.size("stage_rate", "bytes per second this node stages in at most, a `size` like 500M; 0: no cap", &af.stageRate)
	o.int("drain_workers", "`files` drained at once", &cfg.DrainWorkers)
	o.dur("drain_settle", "a file is drained once its size and mtime held this `long`", &cfg.DrainSettle)
	o.dur("scan_interval", "how `often` the tier is scanned for files to drain", &cfg.ScanInterval)
	o.int("stage_workers", "`pieces` staged in at once", &cfg.StageWorkers)
	o.dur("ready_timeout", "a prolog waits this `long` for the tier's MDS and data servers", &cfg.ReadyTimeout)
	o.dur("epilog_timeout", "the final drain's time `budget` (keep it under plugstack.conf timeout=)", &cfg.EpilogTimeout)
	o.dur("after_job_timeout", "how `long` after its job a tier is kept to drain what the epilog could not", &cfg.AfterJobTimeout)
	o.str("log_level", "`level`: debug, info, warn or error", &af.logLevel)
	return af
}

// config turns the parsed keys into the agent's Config.
func (af *agentFlags) config() (agent.Config, error) {
	cfg := af.cfg
	var err error
	if cfg.NodeAddrs, err = agent.ParseNodeAddrs(af.nodeAddrs); err != nil {
		return cfg, usageErrorf("agent", "--node-addrs: %v", err)
	}
	if !filepath.IsAbs(af.mountPrefix) {
		return cfg, usageErrorf("agent", "--mount-prefix %q: want an absolute directory", af.mountPrefix)
	}
	cfg.Tier.DefaultMount = filepath.Join(af.mountPrefix, "%j")
	cfg.DrainRate, cfg.StageRate = int64(af.drainRate), int64(af.stageRate)
	if cfg.Strata == "" {
		if cfg.Strata, err = os.Executable(); err != nil {
			return cfg, fmt.Errorf("agent: the strata binary: %w", err)
		}
	}
	if af.secretFile == "" {
		return cfg, usageErrorf("agent", "--secret-file is required (the global MDS's secret file)")
	}
	if cfg.Secret, err = capability.ReadSecretFile(af.secretFile); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageErrorf("agent", "%v", err)
	}
	return cfg, nil
}
