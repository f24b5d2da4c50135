package oncrpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// Handler serves the calls of a connection. ServeRPC decodes the
// arguments from args, appends the results to res and returns the accept
// state: Success (res holds the results), ProgUnavail, ProgMismatch,
// ProcUnavail, GarbageArgs or SystemErr (res is ignored), or one of the
// Deny* values. It may run concurrently for calls of one connection.
type Handler interface {
	ServeRPC(ctx context.Context, c *Conn, call *Call, args *xdr.Reader, res *xdr.Writer) uint32
}

// Deny results a Handler may return instead of an accept state.
const (
	DenyAuthBadCred uint32 = 1000 + AuthBadCred
	DenyAuthTooWeak uint32 = 1000 + AuthTooWeak
)

// ConnConfig bounds a connection.
type ConnConfig struct {
	MaxRecord   int    // largest record accepted; a larger one closes the connection
	MaxInflight int    // calls served at once
	VersLow     uint32 // versions a ProgMismatch reply names
	VersHigh    uint32
}

// Conn is one client connection: calls from the peer are served by the
// Handler; Call sends a call to the peer (the backchannel) and waits for
// its reply.
type Conn struct {
	nc  net.Conn
	cfg ConnConfig
	h   Handler

	wmu sync.Mutex // serializes records on the wire

	mu      sync.Mutex
	nextXid uint32
	pending map[uint32]chan []byte
	closed  bool
	done    chan struct{}
	values  map[any]any
}

// NewConn wraps nc; Serve runs it.
func NewConn(nc net.Conn, cfg ConnConfig, h Handler) *Conn {
	return &Conn{nc: nc, cfg: cfg, h: h, nextXid: 0x5a000000, pending: map[uint32]chan []byte{}, done: make(chan struct{}), values: map[any]any{}}
}

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// SetValue attaches v to the connection under key (e.g. the sessions
// bound to it); Value reads it back.
func (c *Conn) SetValue(key, v any) {
	c.mu.Lock()
	c.values[key] = v
	c.mu.Unlock()
}

// Value returns what SetValue stored under key, or nil.
func (c *Conn) Value(key any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.values[key]
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close closes the connection; Serve returns.
func (c *Conn) Close() error { return c.nc.Close() }

// Serve reads and serves calls until the connection fails or ctx ends; it
// waits for the calls it started. It returns the error that ended it (nil
// for a clean EOF).
func (c *Conn) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = c.nc.Close() })
	defer stop()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(c.cfg.MaxInflight, 1))
	br := bufio.NewReaderSize(c.nc, 64<<10)
	err := func() error {
		for {
			rec, err := ReadRecord(br, nil, c.cfg.MaxRecord)
			if err != nil {
				return err
			}
			r := xdr.NewReader(rec)
			xid := r.Uint32()
			mt := r.Uint32()
			if r.Err() != nil {
				return fmt.Errorf("rpc header: %w", r.Err())
			}
			switch mt {
			case MsgReply:
				c.deliver(xid, rec)
				continue
			case MsgCall:
			default:
				return fmt.Errorf("%w: type %d", ErrNotCall, mt)
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c.serveCall(ctx, xid, r)
			}()
		}
	}()
	_ = c.nc.Close()
	cancel()
	wg.Wait()
	c.mu.Lock()
	c.closed = true
	for x, ch := range c.pending {
		close(ch)
		delete(c.pending, x)
	}
	c.mu.Unlock()
	close(c.done)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func (c *Conn) serveCall(ctx context.Context, xid uint32, r *xdr.Reader) {
	var call Call
	call.Xid = xid
	w := xdr.NewWriter(make([]byte, 0, 512))
	w.Reserve() // record mark
	if !decodeCall(r, &call) {
		deniedHeader(w, xid, RPCMismatch, 0)
		c.send(w)
		return
	}
	if r.Err() != nil {
		acceptedHeader(w, xid, GarbageArgs)
		c.send(w)
		return
	}
	if call.Flavor == AuthSys {
		s, err := ParseSys(call.Cred)
		if err != nil {
			deniedHeader(w, xid, AuthError, AuthBadCred)
			c.send(w)
			return
		}
		call.Sys = s
	}
	hdr := w.Len()
	acceptedHeader(w, xid, Success)
	stat := c.h.ServeRPC(ctx, c, &call, r, w)
	if stat == Success {
		c.send(w)
		return
	}
	w.Truncate(hdr)
	switch {
	case stat >= 1000:
		deniedHeader(w, xid, AuthError, stat-1000)
	case stat == ProgMismatch:
		acceptedHeader(w, xid, ProgMismatch)
		w.Uint32(c.cfg.VersLow)
		w.Uint32(c.cfg.VersHigh)
	default:
		acceptedHeader(w, xid, stat)
	}
	c.send(w)
}

// send writes the record in w, whose first 4 bytes were reserved for the
// record mark. A write error closes the connection (Serve then ends).
func (c *Conn) send(w *xdr.Writer) {
	b := w.Bytes()
	h := RecordHeader(len(b) - 4)
	copy(b, h[:])
	c.wmu.Lock()
	_, err := c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		_ = c.nc.Close()
	}
}

func (c *Conn) deliver(xid uint32, rec []byte) {
	c.mu.Lock()
	ch := c.pending[xid]
	delete(c.pending, xid)
	c.mu.Unlock()
	if ch != nil {
		ch <- rec
	}
}

// Call sends a call of prog/vers/proc with an AUTH_SYS credential cred (or
// AUTH_NONE if nil) and the encoded args, and returns the reply's results
// once the peer answers, ctx ends or the connection closes.
func (c *Conn) Call(ctx context.Context, prog, vers, proc uint32, cred *SysCred, args []byte) ([]byte, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.nextXid++
	xid := c.nextXid
	ch := make(chan []byte, 1)
	c.pending[xid] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, xid)
		c.mu.Unlock()
	}()
	w := xdr.NewWriter(make([]byte, 0, 128+len(args)))
	w.Reserve()
	w.Uint32(xid)
	w.Uint32(MsgCall)
	w.Uint32(2)
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proc)
	if cred != nil {
		w.Uint32(AuthSys)
		body := xdr.NewWriter(nil)
		EncodeSys(body, cred)
		w.Opaque(body.Bytes())
	} else {
		w.Uint32(AuthNone)
		w.Uint32(0)
	}
	w.Uint32(AuthNone)
	w.Uint32(0)
	w.Fixed(args)
	c.send(w)
	select {
	case rec, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		return parseReply(rec)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, ErrClosed
	}
}

func parseReply(rec []byte) ([]byte, error) {
	r := xdr.NewReader(rec)
	r.Uint32() // xid
	r.Uint32() // reply
	if st := r.Uint32(); st != MsgAccepted {
		return nil, fmt.Errorf("%w: denied", ErrBadReply)
	}
	r.Uint32()
	r.Opaque(MaxAuthBody)
	if st := r.Uint32(); st != Success || r.Err() != nil {
		return nil, fmt.Errorf("%w: accept state %d", ErrBadReply, st)
	}
	return r.Rest(), nil
}
