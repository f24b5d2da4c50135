package mds

import (
	"crypto/tls"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// tlsConfigs is the MDS's TLS (Config.TLS, docs/security.md), all nil when
// it is off: its RPC listener's, its own calls' to data servers (GC,
// rebuild) and raft's both ways.
type tlsConfigs struct {
	server *tls.Config // the RPC listener: callers' certificates checked if presented (or required)
	client *tls.Config // calls to data servers and raft peers: the MDS's certificate presented
	raft   *tls.Config // raft's listener: a peer without a certificate signed by the CA is refused
}

// loadTLS loads the files of f.
func loadTLS(f rpc.TLSFiles) (tlsConfigs, error) {
	if !f.On() {
		return tlsConfigs{}, nil
	}
	var t tlsConfigs
	var err error
	if t.server, err = f.ServerConfig(); err != nil {
		return t, fmt.Errorf("mds: %w", err)
	}
	if t.client, err = f.ClientConfig(); err != nil {
		return t, fmt.Errorf("mds: %w", err)
	}
	t.raft = t.server.Clone()
	if t.raft.ClientCAs != nil {
		t.raft.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return t, nil
}
