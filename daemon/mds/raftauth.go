package mds

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MDS peers authenticate to each other as holders of the cluster secret:
// every raft connection starts with a mutual challenge-response (HMAC-SHA256
// under a key derived from the secret over both sides' fresh nonces) before
// raft's own protocol, so that nobody without the secret can vote, append
// entries or install a snapshot.
//
//	dialer:   "SRAFT1" nonceC                      (6+16 bytes)
//	acceptor: nonceS  HMAC(k, "S" nonceC nonceS)   (16+32)
//	dialer:   HMAC(k, "C" nonceS nonceC)           (32)
//
// The acceptor shakes hands in a goroutine of its own per connection, so
// that a stalled peer delays nobody else.

const (
	raftMagic          = "SRAFT1"
	raftNonceSize      = 16
	raftHandshakeLimit = 5 * time.Second
)

var errRaftPeer = errors.New("mds: raft peer failed the cluster secret handshake")

// raftKey derives the raft handshake key from the cluster secret.
func raftKey(secret []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("strata raft peer v1"))
	return h.Sum(nil)
}

func raftMAC(key []byte, side byte, a, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte{side})
	h.Write(a)
	h.Write(b)
	return h.Sum(nil)
}

// authStream is a raft.StreamLayer over TCP whose connections passed the
// handshake.
type authStream struct {
	ln     net.Listener
	key    []byte
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	advert net.Addr
	tls    *tls.Config // if set, accepted connections speak TLS (before the handshake)
	dial   *tls.Config // if set, dialled connections speak TLS
}

var _ raft.StreamLayer = (*authStream)(nil)

func newAuthStream(addr string, secret []byte, srvTLS, dialTLS *tls.Config) (*authStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %s is not one peers can reach: give the node's own address", addr)
	}
	s := &authStream{ln: ln, key: raftKey(secret), conns: make(chan net.Conn), done: make(chan struct{}), advert: ln.Addr(),
		tls: srvTLS, dial: dialTLS}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *authStream) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if s.tls != nil {
				c = tls.Server(c, s.tls) // the handshake runs in serverHandshake's first read, under its deadline
			}
			if err := s.serverHandshake(c); err != nil {
				c.Close()
				return
			}
			select {
			case s.conns <- c:
			case <-s.done:
				c.Close()
			}
		}()
	}
}

func (s *authStream) serverHandshake(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(raftHandshakeLimit))
	hello := make([]byte, len(raftMagic)+raftNonceSize)
	if _, err := io.ReadFull(c, hello); err != nil || string(hello[:len(raftMagic)]) != raftMagic {
		return errRaftPeer
	}
	nc := hello[len(raftMagic):]
	ns := make([]byte, raftNonceSize)
	if _, err := rand.Read(ns); err != nil {
		return err
	}
	if _, err := c.Write(append(append([]byte(nil), ns...), raftMAC(s.key, 'S', nc, ns)...)); err != nil {
		return err
	}
	proof := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, proof); err != nil || !hmac.Equal(proof, raftMAC(s.key, 'C', ns, nc)) {
		return errRaftPeer
	}
	return c.SetDeadline(time.Time{})
}

// Accept returns the next connection that passed the handshake.
func (s *authStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and waits for the handshakes in progress.
func (s *authStream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.wg.Wait()
	})
	return err
}

// Addr is the address raft advertises.
func (s *authStream) Addr() net.Addr { return s.advert }

// Dial connects to a peer and proves, and checks, the cluster secret.
func (s *authStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if s.dial != nil {
		cfg := s.dial.Clone()
		if host, _, err := net.SplitHostPort(string(addr)); err == nil && cfg.ServerName == "" {
			cfg.ServerName = host
		}
		c = tls.Client(c, cfg)
	}
	if err := s.clientHandshake(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("raft peer %s: %w", addr, err)
	}
	return c, nil
}

func (s *authStream) clientHandshake(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(raftHandshakeLimit))
	nc := make([]byte, raftNonceSize)
	if _, err := rand.Read(nc); err != nil {
		return err
	}
	if _, err := c.Write(append([]byte(raftMagic), nc...)); err != nil {
		return err
	}
	reply := make([]byte, raftNonceSize+sha256.Size)
	if _, err := io.ReadFull(c, reply); err != nil {
		return errRaftPeer
	}
	ns := reply[:raftNonceSize]
	if !hmac.Equal(reply[raftNonceSize:], raftMAC(s.key, 'S', nc, ns)) {
		return errRaftPeer
	}
	if _, err := c.Write(raftMAC(s.key, 'C', ns, nc)); err != nil {
		return err
	}
	return c.SetDeadline(time.Time{})
}
