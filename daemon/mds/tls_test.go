package mds_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcerts"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestTLS runs three MDS replicas (raft over TLS) and four data servers
// with TLS on every listener: a client given the cluster's CA writes a
// striped file and reads it back byte for byte; a mirrored file's copy on
// a stopped data server is rebuilt (data server to data server); a client that speaks plain
// HTTP, one that presents a certificate of another CA, and one that does
// not trust the cluster's CA get nothing done (the file they try to create
// does not exist afterwards); nor does a raft peer without a certificate.
func TestTLS(t *testing.T) {
	certs := testcerts.Write(t)
	// Raft's timeouts as a deployment's (1 s), not the test default's
	// 50 ms: every new raft connection's TLS handshake costs a few ms of
	// CPU, and a loaded machine must not make the leader step down.
	cl := testcluster.Start(t, 4, testcluster.WithMDS(3),
		testcluster.WithMDSConfig(func(c *mds.Config) { fastRepair(c); c.RaftTimeout = time.Second }),
		testcluster.WithTLS(certs.Node),
		testcluster.WithDefaultLayout("width=4,unit=64K,scheme=none"))
	ctx := testcluster.Context(t, 2*time.Minute)

	good := tlsClient(t, cl, certs.Node.ClientConfig)
	want := make([]byte, 1<<20+4321)
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}
	f, err := good.Create(ctx, "/over-tls")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := good.Open(ctx, "/over-tls")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(r, 0, int64(len(want))+1))
	r.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back over TLS: %d bytes (%v), wrote %d", len(got), err, len(want))
	}

	// A data server stops: its copy of a mirrored file is rebuilt data
	// server to data server, over TLS.
	l, _ := put(t, ctx, good, "/mirrored", "width=1,unit=64K,scheme=mirror:2", want)
	victim := l.Targets[0]
	if err := cl.StopDS(dsIndex(t, cl, victim)); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "rebuild over TLS of "+victim+"'s copy", func() string { return healthy(ctx, good, []string{"/mirrored"}, victim) })
	mustGet(t, ctx, good, "/mirrored", want)

	for name, cfg := range map[string]func() (*tls.Config, error){
		"plain HTTP":                         func() (*tls.Config, error) { return nil, nil },
		"a certificate of another CA":        certs.Rogue.ClientConfig,
		"no trust in the cluster's CA":       rpc.TLSFiles{CA: certs.OtherCA}.ClientConfig,
		"no certificate, trusting no server": func() (*tls.Config, error) { return &tls.Config{MinVersion: tls.VersionTLS12}, nil },
	} {
		c := tlsClient(t, cl, cfg)
		if err := c.Mkdir(ctx, "/refused", 0o755); err == nil {
			t.Errorf("a client with %s made a directory", name)
		} else {
			t.Logf("a client with %s: %v", name, err)
		}
		if _, err := good.Stat(ctx, "/refused"); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("after the client with %s: stat /refused: %v, want ENOENT", name, err)
		}
		if err := dsInfo(ctx, cl, cfg); err == nil {
			t.Errorf("a data server answered a client with %s", name)
		}
	}
	if err := dsInfo(ctx, cl, certs.Node.ClientConfig); err != nil {
		t.Errorf("a data server refused the cluster's certificate: %v", err)
	}

	// A raft peer that cannot show a certificate of the cluster's CA is
	// refused in the handshake, before raft's own.
	raftAddr := cl.RaftAddrs()[0]
	for name, cfg := range map[string]func() (*tls.Config, error){
		"no certificate":              rpc.TLSFiles{CA: certs.Node.CA}.ClientConfig,
		"a certificate of another CA": certs.Rogue.ClientConfig,
	} {
		c, err := cfg()
		if err != nil {
			t.Fatal(err)
		}
		c.ServerName = "127.0.0.1"
		if err := tryRaftTLS(raftAddr, c); err == nil {
			t.Errorf("raft accepted a TLS connection with %s", name)
		}
	}
	c, err := certs.Node.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c.ServerName = "127.0.0.1"
	if err := tryRaftTLS(raftAddr, c); err != nil {
		t.Errorf("raft refused a TLS connection with the cluster's certificate: %v", err)
	}
}

// tlsClient is a client of cl whose calls speak the TLS cfg returns (nil:
// plain) and give up on an unreachable MDS after a second.
func tlsClient(t *testing.T, cl *testcluster.Cluster, cfg func() (*tls.Config, error)) *client.Client {
	t.Helper()
	tc, err := cfg()
	if err != nil {
		t.Fatal(err)
	}
	cc := client.DefaultConfig()
	cc.MDS = cl.MDSAddr()
	cc.Auth = cl.Credentials()
	cc.TLS = tc
	cc.Timeout = 10 * time.Second
	cc.FailoverTimeout = time.Second
	c, err := client.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tryRaftTLS completes a TLS handshake with a raft listener and reads from
// it: the server's verdict on a client certificate arrives with the first
// read (TLS 1.3). A peer that passed waits for raft's own handshake, so
// the read times out: that is success.
func tryRaftTLS(addr string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	return nil
}

// dsInfo calls the first data server's info method over the TLS cfg
// returns (nil: plain), as a node daemon.
func dsInfo(ctx context.Context, cl *testcluster.Cluster, cfg func() (*tls.Config, error)) error {
	tc, err := cfg()
	if err != nil {
		return err
	}
	c := rpc.NewClient(rpc.ClientConfig{Timeout: 5 * time.Second, MaxConnsPerHost: 1, Auth: cl.Credentials().Header, TLS: tc})
	defer c.Close()
	return c.Call(ctx, cl.DSAddr(0), rpc.DInfo, &rpc.Empty{}, &rpc.DSInfoResp{})
}
