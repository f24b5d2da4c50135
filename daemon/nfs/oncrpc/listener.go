package oncrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// Listener serves every connection accepted on a TCP address with a Conn
// of one config and handler, until Close.
type Listener struct {
	ln   net.Listener
	cfg  ConnConfig
	h    Handler
	gone func(c *Conn, err error)

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[*Conn]struct{}
}

// Listen listens on addr and serves its connections with h until Close
// (or ctx ends); gone, if set, is called as each connection ends, with
// what ended it.
func Listen(ctx context.Context, addr string, cfg ConnConfig, h Handler, gone func(c *Conn, err error)) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oncrpc: listen %s: %w", addr, err)
	}
	l := &Listener{ln: ln, cfg: cfg, h: h, gone: gone, conns: map[*Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept(ctx)
	return l, nil
}

// Addr returns the address it listens on.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops accepting, closes every connection and waits until they
// have ended.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (l *Listener) accept(ctx context.Context) {
	defer l.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			return
		}
		c := NewConn(nc, l.cfg, l.h)
		l.mu.Lock()
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			err := c.Serve(ctx)
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
			if l.gone != nil {
				l.gone(c, err)
			}
		}()
	}
}
