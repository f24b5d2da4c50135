package rpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSFilesRefused: incomplete or unusable TLS files are refused with a
// message naming what is wrong, before any listener opens.
func TestTLSFilesRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f      TLSFiles
		server bool
		want   string
	}{
		{TLSFiles{Cert: "c.pem"}, true, "both a certificate and a key"},
		{TLSFiles{Key: "k.pem"}, false, "both a certificate and a key"},
		{TLSFiles{Cert: "c.pem", Key: "k.pem", RequireClientCert: true}, true, "needs a CA file"},
		{TLSFiles{CA: notPEM}, true, "a server needs a certificate"},
		{TLSFiles{CA: notPEM}, false, "no PEM certificate"},
		{TLSFiles{CA: filepath.Join(dir, "missing.pem")}, false, "no such file"},
		{TLSFiles{Cert: filepath.Join(dir, "missing.pem"), Key: filepath.Join(dir, "missing.key")}, true, "no such file"},
	} {
		var err error
		if tc.server {
			_, err = tc.f.ServerConfig()
		} else {
			_, err = tc.f.ClientConfig()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v (server %v): %v, want %q", tc.f, tc.server, err, tc.want)
		}
	}
	if (TLSFiles{}).On() {
		t.Error("the zero TLSFiles is on")
	}
}
