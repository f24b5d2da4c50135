package main

import (
	"fmt"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// tlsOptions are the keys of TLS on the RPC transport (docs/security.md):
// a daemon's certificate, key and CA; server adds the choice to refuse
// callers without a certificate.
func tlsOptions(o *options, f *rpc.TLSFiles, server bool) {
	o.str("tls_cert", "PEM certificate `file` of this daemon: RPC over TLS (with tls_key; off if empty)", &f.Cert)
	o.str("tls_key", "PEM private key `file` of tls_cert", &f.Key)
	o.str("tls_ca", "PEM `file` of the CA the peers' certificates are checked against", &f.CA)
	if !server {
		return
	}
	o.boolean("tls_require_client_cert", "refuse callers without a certificate of tls_ca (`true` or false; users' processes have none)", &f.RequireClientCert)
}

// clientTLS sets a client command's TLS from the environment:
// $STRATA_TLS_CA (the cluster's CA: TLS on), $STRATA_TLS_CERT and
// $STRATA_TLS_KEY (a certificate to present, if any).
func clientTLS(a *app, cfg *client.Config) error {
	f := rpc.TLSFiles{CA: a.getenv("STRATA_TLS_CA"), Cert: a.getenv("STRATA_TLS_CERT"), Key: a.getenv("STRATA_TLS_KEY")}
	if !f.On() {
		return nil
	}
	c, err := f.ClientConfig()
	if err != nil {
		return fmt.Errorf("STRATA_TLS_CA, STRATA_TLS_CERT, STRATA_TLS_KEY: %w", err)
	}
	cfg.TLS = c
	return nil
}
