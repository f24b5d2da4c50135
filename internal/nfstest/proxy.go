package nfstest

import (
	"encoding/binary"
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
	drop   atomic.Bool  // drop the server's calls to the client
	calls  atomic.Int64 // server calls dropped
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
			_ = p.relayReplies(c, s)
			_ = c.Close()
		}()
	}
}

// DropCallbacks makes the proxy drop (or, with false, pass again) the
// ONC RPC calls the server sends the client on its connection, the
// NFSv4.1 backchannel: the client looks as if it never answered a
// callback, while its own calls and their replies go through.
func (p *Proxy) DropCallbacks(on bool) { p.drop.Store(on) }

// DroppedCallbacks returns how many server calls were dropped.
func (p *Proxy) DroppedCallbacks() int64 { return p.calls.Load() }

// relayReplies copies ONC RPC records (RFC 5531 record marking) from src
// to dst, leaving out the calls while DropCallbacks is on.
func (p *Proxy) relayReplies(dst io.Writer, src io.Reader) error {
	var rec []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return err
		}
		h := binary.BigEndian.Uint32(hdr[:])
		n := int(h & 0x7fffffff)
		if n > 16<<20 {
			return io.ErrShortBuffer // no NFS record is this large
		}
		start := len(rec)
		rec = append(rec, hdr[:]...)
		rec = append(rec, make([]byte, n)...)
		if _, err := io.ReadFull(src, rec[start+4:]); err != nil {
			return err
		}
		if h&0x80000000 == 0 {
			continue // more fragments of this record
		}
		// The first fragment's body starts with the xid and the type.
		if len(rec) >= 12 && binary.BigEndian.Uint32(rec[8:12]) == 0 && p.drop.Load() {
			p.calls.Add(1)
		} else if _, err := dst.Write(rec); err != nil {
			return err
		}
		rec = rec[:0]
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
