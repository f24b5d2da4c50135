package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

func runDS(ctx context.Context, a *app, args []string) error {
	f := newFlags("ds", "", `
Run a data server: it stores file components under --dir, serves reads and
writes to clients that hold a capability signed with the cluster secret,
and heartbeats to the MDS. --id and --secret-file are required; the secret
file is the one the MDS created. Every key can also come from the
environment or a TOML file (see docs/config.md); flags win over the
environment, which wins over the file. SIGINT or SIGTERM stops it cleanly.`)
	cfg := ds.DefaultConfig()
	cfg.MDS = client.DefaultMDS
	cfg.Dir = "/var/lib/strata/ds"
	secretFile, logLevel := "", "info"
	o := newOptions("ds")
	o.str("id", "unique data server `id`, e.g. ds1 (required)", &cfg.ID)
	o.str("listen", "`address` clients and the MDS use", &cfg.Listen)
	o.str("advertise", "`address` reported to the MDS; default the listen address", &cfg.Advertise)
	o.str("dir", "component store `directory`", &cfg.Dir)
	o.str("mds", "MDS `address`(es), comma separated", &cfg.MDS)
	o.str("secret_file", "cluster secret `file`, as created by the MDS (required)", &secretFile)
	o.str("node", "failure domain (`host` name); default the id", &cfg.Node)
	o.str("rack", "wider failure domain: placement never puts two columns of a file in one `rack`; default none", &cfg.Rack)
	o.size("capacity", "capacity to report, a `size` like 2T; 0 = the size of the file system holding dir", &cfg.Capacity)
	o.dur("heartbeat_interval", "heartbeat `interval` until the MDS says otherwise", &cfg.HeartbeatInterval)
	o.intSize("block_size", "checksum block `size`, a power of two from 4K to 16M", &cfg.BlockSize)
	scrubOptions(o, &cfg)
	qosBW := uint64(0)
	o.size("qos_bandwidth", "bytes a second the QoS scheduler lets through (the disk's bandwidth, a `size` like 2G); 0: unpaced (docs/qos.md)", &qosBW)
	o.int("qos_max_inflight", "reads and writes served at once (`number`); more wait in the QoS queues", &cfg.QoSMaxInflight)
	o.int("qos_max_queued", "reads and writes that may wait (`number`); one more is answered EBUSY", &cfg.QoSMaxQueued)
	rpcOptions(o, &cfg.RPC, true)
	tlsOptions(o, &cfg.TLS, true)
	nfsAddr := ""
	o.str("nfs", "serve NFSv3 for pNFS flex-files clients (docs/nfs.md) on this `address`, e.g. 0.0.0.0:2049; off if empty", &nfsAddr)
	o.str("log_level", "`level`: debug, info, warn or error", &logLevel)
	log, err := parseDaemon(a, f, o, args, &logLevel)
	if err != nil {
		return err
	}
	if cfg.ID == "" {
		return usageErrorf("ds", "--id is required")
	}
	if cfg.TLS.On() && nfsAddr != "" && nfsAddr != "off" {
		return usageErrorf("ds", "--nfs is not available with TLS yet (the NFSv3 service calls the data server in plain RPC)")
	}
	if secretFile == "" {
		return usageErrorf("ds", "--secret-file is required (the file the MDS created)")
	}
	if cfg.Secret, err = capability.ReadSecretFile(secretFile); err != nil {
		return err
	}
	if err := mkdirPrivate(cfg.Dir); err != nil {
		return err
	}
	cfg.QoSBandwidth = int64(min(qosBW, 1<<62))
	if err := cfg.Validate(); err != nil {
		return err
	}
	d, err := ds.New(cfg, ds.Deps{Log: log})
	if err != nil {
		return err
	}
	names, servers := []string{"ds"}, []server{d}
	if nfsAddr != "" && nfsAddr != "off" {
		n, err := newDS3(log, nfsAddr, cfg)
		if err != nil {
			_ = d.Close()
			return err
		}
		names, servers = append(names, "nfs"), append(servers, n)
	}
	log.Info("starting ds", "id", cfg.ID, "listen", cfg.Listen, "mds", cfg.MDS, "dir", cfg.Dir, "nfs", nfsAddr)
	if err := runUntilDone(ctx, log, names, servers); err != nil {
		return fmt.Errorf("ds: %w", err)
	}
	return nil
}

// ds3ClientServer is the NFSv3 data server service with the MDS client
// it owns.
type ds3ClientServer struct {
	*ds3.Server
	cl *client.Client
}

func (s ds3ClientServer) Close() error {
	err := s.Server.Close()
	_ = s.cl.Close()
	return err
}

// newDS3 returns the NFSv3 service of the data server of cfg on addr. It
// learns file sizes (ds3.Config.Size) from the MDS as a node daemon of
// the data server's node (docs/security.md).
func newDS3(log *slog.Logger, addr string, cfg ds.Config) (server, error) {
	ccfg := client.DefaultConfig()
	ccfg.MDS = cfg.MDS
	ccfg.Cred.Uid, ccfg.Cred.Gid = 0, 0
	ccfg.Auth = identity.NewNodeCredentials(cfg.Secret, identity.RoleNode, "", "")
	cl, err := client.New(ccfg)
	if err != nil {
		return nil, err
	}
	n, err := ds3.New(ds3.Config{Addr: addr, DSAddr: loopbackOf(cfg.Listen), Secret: cfg.Secret, Size: ds3.SizeFrom(cl)}, log)
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	return ds3ClientServer{Server: n, cl: cl}, nil
}

// mkdirPrivate makes a daemon's data directory.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}
