package nfstest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy relays TCP connections to target and counts the bytes
// clients send through it: how much data reached each server.
type Proxy struct {
	ln     net.Listener
	target string
	in     atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// StartProxy starts a Proxy to target, closed when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// In returns the bytes clients sent so far.
func (p *Proxy) In() int64 { return p.in.Load() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(counter{s, &p.in}, c)
			_ = s.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, s)
			_ = c.Close()
		}()
	}
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
