package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"sync"

	"golang.org/x/sys/unix"
)

// Spliced requests: a data handler registered with HandleSplice may take
// a large request's data straight from a plain TCP connection into a file
// (Body.Into): the kernel moves the socket's pages into a pipe and from
// the pipe into the file's page cache (splice(2)), so the bytes are never
// copied into the process, where a body read into a buffer costs a copy
// out of the socket and another into the file. The handler verifies what
// it stored from the file's pages.
//
// fasthttp reads every request through a buffer of its own, which may
// already hold the first bytes of the data: a server that serves spliced
// calls accepts its connections as spliceConns, which can tell fasthttp's
// reader that nothing more has arrived (hold: the handler has then taken
// every byte fasthttp had buffered) and can hand it the bytes the kernel
// moved as if it had read them (skip), so that fasthttp's count of the
// body is right and the connection serves its next call.

// spliceMin is the least data a call must carry to be spliced: fasthttp's
// buffers (its 8 KiB prefetch and 16 KiB read buffer) are taken first.
const spliceMin = 256 << 10

// spliceHead is the buffer that takes what fasthttp had buffered of a
// spliced call's data: more than its prefetch and read buffer hold, plus
// room for one read of a full read buffer that finds nothing (hold).
const spliceHead = 64 << 10

// pipeSize is the pipe a connection splices through (F_SETPIPE_SZ; the
// default pipe, 16 pages, takes more calls per MiB).
const pipeSize = 1 << 20

// spliceListener accepts plain TCP connections as spliceConns.
type spliceListener struct{ net.Listener }

func (l spliceListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return &spliceConn{Conn: tc, tcp: tc}, nil
	}
	return c, err
}

// spliceConn is a server connection whose request data a handler may
// splice. Read is called by the goroutine serving the connection only;
// Close may come from another (a shutdown).
type spliceConn struct {
	net.Conn // the *net.TCPConn (tcpConn finds it by this name)
	tcp      *net.TCPConn
	hold     bool // Read answers 0, nil: fasthttp's buffered bytes are taken
	skip     int  // bytes Read reports without reading: those spliced

	mu     sync.Mutex // guards the pipe and closed
	pr, pw int        // the pipe, -1 when there is none
	psize  int
	closed bool
}

// Read reads from the socket, except while a handler takes a call's data
// (hold, skip).
func (c *spliceConn) Read(p []byte) (int, error) {
	if c.hold {
		return 0, nil
	}
	if c.skip > 0 {
		n := min(len(p), c.skip)
		c.skip -= n
		return n, nil
	}
	return c.Conn.Read(p)
}

// Close closes the connection and its pipe.
func (c *spliceConn) Close() error {
	err := c.Conn.Close() // ends a splice waiting on the socket first
	c.mu.Lock()
	c.closed = true
	c.dropPipe()
	c.mu.Unlock()
	return err
}

// dropPipe closes the pipe, if there is one; c.mu is held.
func (c *spliceConn) dropPipe() {
	if c.psize > 0 {
		unix.Close(c.pr)
		unix.Close(c.pw)
		c.psize = 0
	}
}

// pipe returns the connection's pipe, made on first use; c.mu is held.
func (c *spliceConn) pipe() error {
	if c.closed {
		return net.ErrClosed
	}
	if c.psize > 0 {
		return nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	c.pr, c.pw = fds[0], fds[1]
	c.psize = 64 << 10
	if n, err := unix.FcntlInt(uintptr(c.pw), unix.F_SETPIPE_SZ, pipeSize); err == nil {
		c.psize = n
	}
	return nil
}

// spliceTo writes head, then n bytes from the socket, into f at off, as
// one run of the file: head is written into the pipe ahead of the
// socket's bytes, so that the file's pages are filled in order from off.
// It returns how many of the socket's bytes reached the file.
func (c *spliceConn) spliceTo(f *os.File, off int64, head []byte, n int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.pipe(); err != nil {
		return 0, err
	}
	sock, err := c.tcp.SyscallConn()
	if err != nil {
		return 0, err
	}
	file, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	if len(head) > c.psize/2 {
		if _, err := f.WriteAt(head, off); err != nil {
			return 0, err
		}
		off, head = off+int64(len(head)), nil
	}
	queued := 0 // bytes in the pipe
	for len(head) > 0 {
		k, err := unix.Write(c.pw, head) // the pipe has room: it was empty
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.dropPipe()
			return 0, fmt.Errorf("pipe: %w", err)
		}
		head, queued = head[k:], queued+k
	}
	got := 0 // bytes from the socket
	for got < n || queued > 0 {
		if got < n {
			var k int
			var serr error
			err := sock.Read(func(fd uintptr) bool {
				k, serr = splice(int(fd), nil, c.pw, min(n-got, c.psize-queued), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				return !errors.Is(serr, unix.EAGAIN)
			})
			if err == nil {
				err = serr
			}
			if err == nil && k == 0 {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				c.dropPipe()
				return got, fmt.Errorf("splice from the connection: %w", err)
			}
			got, queued = got+k, queued+k
		}
		for queued > 0 {
			var w int
			var werr error
			if err := file.Control(func(fd uintptr) {
				w, werr = splice(c.pr, &off, int(fd), queued, unix.SPLICE_F_MOVE)
			}); err != nil {
				werr = err
			}
			if werr == nil && w == 0 {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				c.dropPipe() // it still holds bytes of this call
				return got, fmt.Errorf("splice into %s: %w", f.Name(), werr)
			}
			queued -= w
		}
	}
	return got, nil
}

// splice is splice(2) from in to out (at *off if off is set: the file's
// offset), retried when interrupted.
func splice(in int, off *int64, out int, n int, flags int) (int, error) {
	for {
		k, err := unix.Splice(in, nil, out, off, n, flags)
		if !errors.Is(err, unix.EINTR) {
			return int(k), err
		}
	}
}

// Body is the data of a call that may be spliced (HandleSplice), still
// on the connection. It is valid only during the handler.
type Body struct {
	s      *Server
	ctx    context.Context
	method string
	c      *spliceConn
	r      io.Reader // fasthttp's stream of the body, past the message
	n      int       // data bytes not yet taken
	done   bool      // every byte was taken and fasthttp counted them
}

// Len returns the bytes of data the call carries.
func (b *Body) Len() int { return b.n }

// Read reads the call's data into memory instead (as a HandleData
// handler gets it), from the server's bounded pool: release gives it
// back.
func (b *Body) Read() (data []byte, release func(), err error) {
	data, release, err = b.s.readData(b.ctx, b.method, b.r, b.n)
	if err == nil {
		b.n, b.done = 0, true
	}
	return data, release, err
}

// Into writes the call's data into f at off: what fasthttp had already
// read from the connection with a pwrite, the rest spliced from the
// socket into the file. On error some of the data may be in the file;
// the caller decides what that range holds.
func (b *Body) Into(f *os.File, off int64) error {
	n := b.n
	buf := getBuf(spliceHead)
	defer putBuf(buf)
	head, err := b.buffered(*buf)
	if err != nil {
		return err
	}
	moved, err := b.c.spliceTo(f, off, head, n-len(head))
	if err != nil {
		return err
	}
	// fasthttp counts the spliced bytes as read, without reading them.
	b.c.skip = moved
	for left := moved; left > 0; {
		k, err := b.r.Read((*buf)[:min(len(*buf), left)])
		left -= k
		if err != nil && !(errors.Is(err, io.EOF) && left == 0) {
			b.c.skip = 0
			return fmt.Errorf("count the spliced body: %w", err)
		}
	}
	b.n, b.done = 0, true
	return nil
}

// buffered reads the data fasthttp holds already (its prefetch and read
// buffer) into buf, up to where its reader would have to read the socket.
func (b *Body) buffered(buf []byte) ([]byte, error) {
	b.c.hold = true
	defer func() { b.c.hold = false }()
	h := 0
	for {
		// A read of at least fasthttp's whole read buffer, with that
		// buffer empty, goes to the connection: hold answers 0, nil.
		if len(buf)-h < readBufferSize || b.n-h < readBufferSize {
			return nil, fmt.Errorf("%w: more of the body buffered than expected", ErrDecode)
		}
		k, err := b.r.Read(buf[h:min(len(buf), b.n)])
		h += k
		if err != nil {
			return nil, fmt.Errorf("read the request body: %w", err)
		}
		if k == 0 {
			return buf[:h], nil
		}
	}
}

// readBufferSize is the server's fasthttp read buffer (NewServer).
const readBufferSize = 16 << 10

// HandleSplice has calls of the data method (HandleData) whose data may be
// spliced, and that want says should be (given the request and how many
// data bytes it carries), served by fn with the data still on the
// connection. Other calls of method go to its HandleData handler as
// before. Register it after HandleData.
func HandleSplice[Req, Resp any](m *Mux, method string, want func(req *Req, n int) bool, fn func(ctx context.Context, req *Req, body *Body) (*Resp, error)) {
	h := m.m[method]
	h.wantSplice = func(req any, n int) bool { return want(req.(*Req), n) }
	h.splice = func(ctx context.Context, req any, b *Body) (any, error) { return fn(ctx, req.(*Req), b) }
}

// spliceBody returns the Body of a call whose data (rest bytes, past the
// message read through br) its handler wants spliced, or nil.
func (s *Server) spliceBody(ctx context.Context, conn net.Conn, method string, h *handler, req any, br io.Reader, rest int) *Body {
	if h.splice == nil || rest < spliceMin || s.tls != nil {
		return nil
	}
	c := innerConn[*spliceConn](conn)
	if c == nil || !h.wantSplice(req, rest) {
		return nil
	}
	return &Body{s: s, ctx: ctx, method: method, c: c, r: br, n: rest}
}

// innerConn returns the connection of type T that c is or wraps (fasthttp
// wraps connections in its own types, each with a field Conn), or the
// zero T.
func innerConn[T net.Conn](c net.Conn) T {
	var zero T
	for range 4 {
		if c == nil {
			return zero
		}
		if t, ok := c.(T); ok {
			return t
		}
		v := reflect.ValueOf(c)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return zero
		}
		f := v.Elem().FieldByName("Conn")
		if !f.IsValid() || !f.CanInterface() {
			return zero
		}
		inner, ok := f.Interface().(net.Conn)
		if !ok {
			return zero
		}
		c = inner
	}
	return zero
}
