package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Certs are PEM files for tests of TLS on the RPC transport, under
// t.TempDir.
type Certs struct {
	// Node is a certificate for 127.0.0.1 (server and client use) signed
	// by the cluster's CA, with the CA file: what every daemon is given.
	Node rpc.TLSFiles
	// Rogue is a certificate for 127.0.0.1 signed by another CA, with
	// the cluster's CA file as the one it trusts: a caller that checks
	// the servers but presents a certificate they must refuse.
	Rogue rpc.TLSFiles
	// OtherCA is the other CA's file.
	OtherCA string
}

// Write makes two CAs and a certificate signed by each.
func Write(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	ca, caKey, caFile := writeCA(t, dir, "cluster-ca")
	other, otherKey, otherFile := writeCA(t, dir, "other-ca")
	cert, key := writeLeaf(t, dir, "node", ca, caKey)
	rcert, rkey := writeLeaf(t, dir, "rogue", other, otherKey)
	return Certs{
		Node:    rpc.TLSFiles{Cert: cert, Key: key, CA: caFile},
		Rogue:   rpc.TLSFiles{Cert: rcert, Key: rkey, CA: caFile},
		OtherCA: otherFile,
	}
}

func writeCA(t testing.TB, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	t.Helper()
	tmpl := template(name, 1)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	key := newKey(t)
	der := create(t, tmpl, tmpl, key, key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
}

func writeLeaf(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	tmpl := template(name, 2)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost"}
	key := newKey(t)
	der := create(t, tmpl, ca, key, caKey)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der),
		writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kb)
}

// template is a certificate valid from an hour ago for a day.
func template(name string, serial int64) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

// create signs tmpl (with key's public half) by parent's key.
func create(t testing.TB, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, name, typ string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}
