package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/strata-hpc/strata/internal/testcerts"
)

// TestMDSAndDSOverTLS runs `strata mds` and `strata ds` with --tls-cert,
// --tls-key and --tls-ca: client commands given the cluster's CA
// (STRATA_TLS_CA) copy a file in and read it back; without it they are
// told the MDS may speak TLS; with a certificate of another CA
// (STRATA_TLS_CERT, STRATA_TLS_KEY) they are refused. --nfs with TLS is a
// usage error.
func TestMDSAndDSOverTLS(t *testing.T) {
	dir := t.TempDir()
	certs := testcerts.Write(t)
	tlsFlags := []string{"--tls-cert", certs.Node.Cert, "--tls-key", certs.Node.Key, "--tls-ca", certs.Node.CA}
	mdsAddr := freeAddr(t)
	m := startDaemon(t, nil, append([]string{"mds",
		"--dir", filepath.Join(dir, "mds"), "--listen", mdsAddr, "--raft-addr", freeAddr(t),
		"--admin-listen", "off", "--heartbeat-interval", "100ms", "--log-level", "warn"}, tlsFlags...)...)
	secret := filepath.Join(dir, "mds", "secret")
	waitFor(t, "the secret file", m, func() bool { _, err := os.Stat(secret); return err == nil })
	startDaemon(t, nil, append([]string{"ds", "--id", "ds1", "--dir", filepath.Join(dir, "ds1"), "--listen", freeAddr(t),
		"--mds", mdsAddr, "--secret-file", secret, "--capacity", "1G", "--log-level", "warn"}, tlsFlags...)...)

	env := map[string]string{"STRATA_MDS": mdsAddr, "STRATA_SECRET_FILE": secret, "STRATA_TLS_CA": certs.Node.CA}
	waitFor(t, "ds1 up over TLS", m, func() bool {
		r := strata(t, env, "df", "--bytes")
		return r.code == 0 && regexp.MustCompile(`(?m)^ds1\s+\S+\s+\S+\s+up\s`).MatchString(r.stdout)
	})
	src, data := randomFile(t, dir, "f.bin", 200000)
	strata(t, env, "cp", src, "/f.bin").ok(t)
	if got := strata(t, env, "cat", "/f.bin").ok(t).stdout; got != string(data) {
		t.Error("cat over TLS differs from what cp wrote")
	}

	plain := maps.Clone(env)
	delete(plain, "STRATA_TLS_CA")
	strata(t, plain, "ls", "/").fails(t, 1, "if it speaks TLS, set STRATA_TLS_CA")
	rogue := maps.Clone(env)
	rogue["STRATA_TLS_CERT"], rogue["STRATA_TLS_KEY"] = certs.Rogue.Cert, certs.Rogue.Key
	strata(t, rogue, "mkdir", "/rogue").fails(t, 1, "cannot reach the MDS")
	untrusting := maps.Clone(env)
	untrusting["STRATA_TLS_CA"] = certs.OtherCA
	strata(t, untrusting, "ls", "/").fails(t, 1, "certificate signed by unknown authority")
	if out := strata(t, env, "ls", "/").ok(t).stdout; out != "f.bin\n" {
		t.Errorf("ls / after the refused clients: %q, want f.bin only", out)
	}

	r := strata(t, nil, append([]string{"ds", "--id", "ds9", "--dir", filepath.Join(dir, "ds9"), "--secret-file", secret,
		"--nfs", "127.0.0.1:0"}, tlsFlags...)...)
	r.fails(t, 2, "--nfs is not available with TLS yet")
}
