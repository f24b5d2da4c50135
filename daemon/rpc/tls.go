package rpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the PEM files of TLS on the RPC transport
// (docs/security.md): a daemon's certificate and private key, and the
// certificate authority (CA) the other side's certificate must be signed
// by. The zero value is TLS off.
type TLSFiles struct {
	Cert string // this side's certificate chain; a server needs one
	Key  string // Cert's private key
	CA   string // the CA bundle peers' certificates are checked against; empty: the system's roots (a client), no client certificates accepted (a server)
	// RequireClientCert has a server refuse a caller that presents no
	// certificate signed by CA (a caller that presents one signed by
	// another CA is refused either way). Users' processes have no
	// certificate unless given one: set it on a server only daemons call.
	RequireClientCert bool
}

// On reports whether TLS is configured.
func (f TLSFiles) On() bool { return f != TLSFiles{} }

// Validate checks that the files come in usable combinations.
func (f TLSFiles) Validate() error {
	if !f.On() {
		return nil
	}
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("rpc: TLS needs both a certificate and a key file")
	}
	if f.RequireClientCert && f.CA == "" {
		return errors.New("rpc: TLS: requiring client certificates needs a CA file")
	}
	return nil
}

// ServerConfig loads the files as a server's TLS: its certificate, and the
// callers' certificates verified against CA when they present one (all of
// them must with RequireClientCert).
func (f TLSFiles) ServerConfig() (*tls.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.Cert == "" {
		return nil, errors.New("rpc: TLS: a server needs a certificate and key file")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("rpc: TLS: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		if c.ClientCAs, err = loadCA(f.CA); err != nil {
			return nil, err
		}
		c.ClientAuth = tls.VerifyClientCertIfGiven
		if f.RequireClientCert {
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return c, nil
}

// ClientConfig loads the files as a caller's TLS: servers' certificates
// verified against CA (and against the address called: certificates must
// name it, as an IP or DNS subject alternative name), and this side's
// certificate presented if there is one.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		var err error
		if c.RootCAs, err = loadCA(f.CA); err != nil {
			return nil, err
		}
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("rpc: TLS: %w", err)
		}
		// Always presented, even to a server whose CA list does not name
		// its issuer (Go's default then sends none): the server decides.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c, nil
}

// loadCA reads a PEM bundle of CA certificates.
func loadCA(name string) (*x509.CertPool, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("rpc: TLS CA: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("rpc: TLS CA %s: no PEM certificate in it", name)
	}
	return p, nil
}
