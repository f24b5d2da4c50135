package mds

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestRaftPeersProveTheSecret: only a peer holding the cluster secret gets
// a raft connection, either way; raw bytes (a raft RPC without the
// handshake) get nothing.
func TestRaftPeersProveTheSecret(t *testing.T) {
	secret, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	srv, err := newAuthStream("127.0.0.1:0", secret, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got := make(chan []byte, 4)
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 5)
			_, _ = io.ReadFull(c, b)
			got <- b
			c.Close()
		}
	}()
	addr := raft.ServerAddress(srv.Addr().String())

	good, err := newAuthStream("127.0.0.1:0", secret, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	c, err := good.Dial(addr, time.Second)
	if err != nil {
		t.Fatalf("a peer with the secret: %v", err)
	}
	_, _ = c.Write([]byte("hello"))
	c.Close()
	if b := <-got; string(b) != "hello" {
		t.Fatalf("accepted %q", b)
	}

	bad, err := newAuthStream("127.0.0.1:0", other, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Dial(addr, time.Second); !errors.Is(err, errRaftPeer) {
		t.Errorf("a peer with another secret: %v, want the handshake refused", err)
	}
	raw, err := net.Dial("tcp", string(addr))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21})
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := raw.Read(make([]byte, 64)); err == nil {
		t.Errorf("a raw connection got %d bytes back", n)
	}
	raw.Close()
	select {
	case b := <-got:
		t.Errorf("a connection without the secret reached raft: %q", b)
	default:
	}
}
