package main

import (
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/internal/identity"
)

// nfsFlags are the options of the NFS front end, shared by mds and dev.
type nfsFlags struct {
	addr    string
	exports string
	dsMap   string
	cfg     nfs.Config
}

func nfsOptions(o *options, n *nfsFlags) {
	n.cfg = nfs.DefaultConfig()
	n.exports = "/ 127.0.0.0/8"
	o.str("nfs", "serve NFSv4.1/4.2 (the pNFS front end, docs/nfs.md) on this `address`, e.g. 0.0.0.0:2049; off if empty", &n.addr)
	o.str("nfs_exports", "NFS `exports`, /etc/exports lines separated by ';', e.g. \"/ 10.0.0.0/8(rw) 127.0.0.1(rw,no_root_squash)\"", &n.exports)
	o.str("nfs_data_servers", "where NFS clients reach each data server's NFSv3 service (strata ds --nfs), as `rpcaddr=nfsaddr` pairs separated by commas; with it or --nfs-ds-port the front end hands out pNFS flex-files layouts", &n.dsMap)
	o.int("nfs_ds_port", "NFSv3 `port` of the data servers not in --nfs-data-servers, on the host of their RPC address; 0: none", &n.cfg.DataServerPort)
	o.dur("nfs_lease", "NFSv4 lease `duration`: a silent client loses its opens and locks after it", &n.cfg.Lease)
	o.dur("nfs_recall_timeout", "how long a pNFS client has to return a recalled layout before it is fenced (`duration`)", &n.cfg.RecallTimeout)
}

// nfsClientServer is the front end with the client it owns.
type nfsClientServer struct {
	*nfs.Server
	cl *client.Client
}

func (s nfsClientServer) Close() error {
	err := s.Server.Close()
	_ = s.cl.Close()
	return err
}

// newNFS returns the front end of n over the MDS at mdsAddr, or nil when
// --nfs is not set; relay forwards the MDS's layout recalls to it.
func newNFS(log *slog.Logger, n *nfsFlags, mdsAddr string, secret []byte, relay *nfs.Relay) (server, error) {
	if n.addr == "" || n.addr == "off" {
		return nil, nil
	}
	cfg := n.cfg
	cfg.Addr = n.addr
	cfg.HandleKey = secret
	cfg.Exports = nil
	for _, line := range strings.Split(n.exports, ";") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		e, err := nfs.ParseExport(line)
		if err != nil {
			return nil, fmt.Errorf("--nfs-exports: %w", err)
		}
		cfg.Exports = append(cfg.Exports, e)
	}
	if n.dsMap != "" {
		cfg.DataServers = map[string]string{}
		for _, kv := range strings.Split(n.dsMap, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("--nfs-data-servers: %q is not rpcaddr=nfsaddr", kv)
			}
			cfg.DataServers[k] = v
		}
	}
	ccfg := client.DefaultConfig()
	ccfg.MDS = loopbackOf(mdsAddr)
	ccfg.Cred.Uid, ccfg.Cred.Gid = 0, 0
	// The front end is a node daemon of the MDS's node (docs/security.md).
	ccfg.Auth = identity.NewNodeCredentials(secret, identity.RoleNode, "", "")
	cl, err := client.New(ccfg)
	if err != nil {
		return nil, err
	}
	s, err := nfs.New(cfg, nfs.Deps{Log: log, Client: cl})
	if err != nil {
		_ = cl.Close()
		return nil, err
	}
	relay.Set(s)
	return nfsClientServer{Server: s, cl: cl}, nil
}

// loopbackOf turns a wildcard listen address into one to dial.
func loopbackOf(addr string) string {
	h, p, err := net.SplitHostPort(addr)
	if err != nil || (h != "" && h != "0.0.0.0" && h != "::") {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", p)
}
