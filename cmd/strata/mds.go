package main

import (
	"context"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/daemon/admin"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

func runMDS(ctx context.Context, a *app, args []string) error {
	f := newFlags("mds", "", `
Run a metadata server: the namespace, layouts and the data server registry,
in a Raft state machine persisted under --dir. Alone it bootstraps itself
as the only voter the first time; with --raft-peers (the same list on every
replica, e.g. m1:7100,m2:7100,m3:7100) the replicas form one raft group and
elect a leader, which alone serves clients (followers redirect them); with
--join it waits to be added by "strata admin mds add". It also serves the admin REST API on
--admin-listen. Every key can also come from the environment or a TOML
file (see docs/config.md); flags win over the environment, which wins over
the file. SIGINT or SIGTERM stops it cleanly.`)
	cfg := mds.DefaultConfig()
	cfg.Dir = "/var/lib/strata/mds"
	cfg.ID = "" // mds.Config's default: mds1, or the raft address with --raft-peers
	secretFile, adminListen, logLevel := "", admin.DefaultListen, "info"
	o := newOptions("mds")
	o.str("id", "raft server `id` (default mds1, or this replica's raft address with --raft-peers)", &cfg.ID)
	o.str("listen", "RPC `address` clients and data servers use", &cfg.Listen)
	o.str("raft_addr", "raft `address`", &cfg.RaftAddr)
	o.str("dir", "`directory` of the raft log, stable store and snapshots", &cfg.Dir)
	o.str("secret_file", "cluster secret `file`, created (0600) if missing; default DIR/secret", &secretFile)
	o.str("default_layout", "`layout` string of files where no directory sets one", &cfg.DefaultLayout)
	o.dur("capability_ttl", "lifetime (a `duration`) of the capabilities handed out with layouts", &cfg.CapabilityTTL)
	o.dur("heartbeat_interval", "`interval` at which data servers are told to heartbeat", &cfg.HeartbeatInterval)
	o.dur("heartbeat_timeout", "a data server silent for this `duration` is down", &cfg.HeartbeatTimeout)
	o.dur("raft_timeout", "raft heartbeat, election and lease `timeout`", &cfg.RaftTimeout)
	o.uint("snapshot_threshold", "raft log `entries` between snapshots", &cfg.SnapshotThreshold)
	o.intSize("inline_max", "new files keep their bytes in the MDS (in raft) up to this `size`; 0: never (at most 256K)", &cfg.InlineMax)
	inlineBudget := uint64(cfg.InlineBudget)
	o.size("inline_budget", "the most bytes all inline files may hold together (in the MDS's memory and snapshots), a `size`; 0: no bound", &inlineBudget)
	o.str("admin_listen", "admin REST API `address`; \"off\" disables it", &adminListen)
	adminTokenFile, adminCert, adminKey := "", "", ""
	o.str("admin_token_file", "`file` (mode 0600) of the bearer token the admin REST API's mutations need", &adminTokenFile)
	o.str("admin_tls_cert", "PEM certificate `file`: serve the admin REST API over HTTPS (with admin_tls_key)", &adminCert)
	o.str("admin_tls_key", "PEM private key `file` of admin_tls_cert", &adminKey)
	adminToken := ""
	o.str("admin_token", "bearer `token` the admin REST API's changes must carry (prefer admin_token_file: a flag shows in ps); empty: none", &adminToken)
	peers := ""
	o.str("raft_peers", "comma-separated raft `addresses` (or id=address) of the initial voters, this one included", &peers)
	o.boolean("join", "start without bootstrapping and wait to be added as a voter (`true` or false)", &cfg.Join)
	o.str("advertise", "RPC `address` followers redirect clients to (default: the listen address)", &cfg.Advertise)
	authOptions(o, &cfg)
	tlsOptions(o, &cfg.TLS, true)
	repairOptions(o, &cfg)
	var nf nfsFlags
	nfsOptions(o, &nf)
	rpcOptions(o, &cfg.RPC, false)
	o.str("log_level", "`level`: debug, info, warn or error", &logLevel)
	log, err := parseDaemon(a, f, o, args, &logLevel)
	if err != nil {
		return err
	}
	if peers != "" {
		cfg.Peers = strings.Split(peers, ",")
	}
	cfg.InlineBudget = int64(min(inlineBudget, 1<<62))
	if cfg.TLS.On() && nf.addr != "" && nf.addr != "off" {
		return usageErrorf("mds", "--nfs is not available with TLS yet (the NFS front end calls the MDS in plain RPC)")
	}
	if secretFile == "" {
		secretFile = filepath.Join(cfg.Dir, "secret")
	}
	if err := mkdirPrivate(cfg.Dir); err != nil {
		return err
	}
	if cfg.Secret, err = capability.LoadOrCreateSecretFile(secretFile); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	relay := &nfs.Relay{} // the front end, made below, hears of moves
	m, err := mds.New(cfg, mds.Deps{Log: log, Recall: relay})
	if err != nil {
		return err
	}
	names, servers := []string{"mds"}, []server{m}
	if adminListen != "off" && adminListen != "" {
		acfg := admin.Config{Listen: adminListen, Token: adminToken, TokenFile: adminTokenFile, MungeSocket: cfg.MungeSocket, AdminGID: -1,
			TLSCert: adminCert, TLSKey: adminKey}
		if g, err := user.LookupGroup(cfg.AdminGroup); cfg.AdminGroup != "" && err == nil {
			acfg.AdminGID, _ = strconv.ParseInt(g.Gid, 10, 64)
		} else if n, err := strconv.ParseInt(cfg.AdminGroup, 10, 64); err == nil {
			acfg.AdminGID = n
		}
		ad, err := admin.New(acfg, admin.Deps{Log: log, Source: m, Tiers: m, QoS: m, Actions: m})
		if err != nil {
			_ = m.Close()
			return err
		}
		names, servers = append(names, "admin"), append(servers, ad)
	}
	// NFS clients are trusted as the MDS trusts its callers.
	nf.cfg.Nodemap = identity.Nodemap{Trusted: cfg.TrustedNodes, Rules: cfg.Squash}
	ns, err := newNFS(log, &nf, cfg.Listen, cfg.Secret, relay)
	if err != nil {
		for _, s := range servers {
			_ = s.Close()
		}
		return err
	}
	if ns != nil {
		names, servers = append(names, "nfs"), append(servers, ns)
	}
	log.Info("starting mds", "id", cfg.ID, "listen", cfg.Listen, "raft_addr", cfg.RaftAddr, "dir", cfg.Dir, "admin", adminListen)
	if err := runUntilDone(ctx, log, names, servers); err != nil {
		return fmt.Errorf("mds: %w", err)
	}
	return nil
}
