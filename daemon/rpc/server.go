package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/valyala/fasthttp"

	"github.com/strata-hpc/strata/internal/logging"
)

// MaxBody is the largest request or response body the transport accepts.
const MaxBody = 72 << 20

// MaxData is the largest data payload of one call; callers split larger I/O.
const MaxData = 64 << 20

// Data is where a data handler puts the bytes of its reply. The buffer is
// owned by the transport and valid only during the handler.
type Data struct {
	buf []byte
	n   int
}

// reserve is room kept in front of reply data for the frame header, so the
// data need not move. A header that does not fit is handled by a copy.
const reserve = 64

// Buffer returns a slice of length n for the handler to fill.
func (d *Data) Buffer(n int) []byte {
	if cap(d.buf) < reserve+n {
		// Headroom: serve hands the buffer to the response from the start
		// of the frame header, so every reply takes up to reserve bytes off
		// the front of the capacity; without slack the next Buffer of the
		// same size would allocate again.
		d.buf = make([]byte, reserve+n, reserve+n+n/16+reserve)
	}
	d.buf = d.buf[:reserve+n]
	return d.buf[reserve:]
}

// Commit records that the first n bytes of the Buffer are the reply.
func (d *Data) Commit(n int) { d.n = n }

type rawHandler func(ctx context.Context, body []byte, d *Data) (any, error)

// Mux routes method names to handlers. Register everything before Serve.
type Mux struct {
	m map[string]rawHandler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{m: map[string]rawHandler{}} }

// Handle registers a call that takes and returns a message.
func Handle[Req, Resp any](m *Mux, method string, fn func(context.Context, *Req) (*Resp, error)) {
	m.m[method] = func(ctx context.Context, body []byte, _ *Data) (any, error) {
		req := new(Req)
		if _, err := splitFrame(body, req); err != nil {
			return nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: %v", method, err))
		}
		return fn(ctx, req)
	}
}

// HandleData registers a call whose request and reply carry raw bytes
// after the message. in is valid only during fn.
func HandleData[Req, Resp any](m *Mux, method string, fn func(ctx context.Context, req *Req, in []byte, out *Data) (*Resp, error)) {
	m.m[method] = func(ctx context.Context, body []byte, d *Data) (any, error) {
		req := new(Req)
		in, err := splitFrame(body, req)
		if err != nil {
			return nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: %v", method, err))
		}
		return fn(ctx, req, in, d)
	}
}

// Server serves a Mux over HTTP/1.1 with fasthttp.
type Server struct {
	mux  *Mux
	log  *slog.Logger
	srv  *fasthttp.Server
	pool sync.Pool // *Data
}

// NewServer returns a server for mux.
func NewServer(mux *Mux, log *slog.Logger) *Server {
	s := &Server{mux: mux, log: log}
	s.srv = &fasthttp.Server{
		Handler:               s.serve,
		MaxRequestBodySize:    MaxBody,
		ReadBufferSize:        16 << 10,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		// fasthttp's own lines (connection errors, warnings) go through
		// the daemon's logger: structured, and rate-limited when repeated.
		Logger: logging.Printf(log, slog.LevelWarn, "fasthttp"),
	}
	return s
}

// StreamBodies has the server read request bodies of streamMin bytes or
// more from the connection into pooled buffers (requestBody) rather than
// into buffers fasthttp allocates for each: for a data server, whose writes
// carry MiBs. Not for small calls: streaming costs them a third of their
// rate (fasthttp's stream object and prefetch on every request). Call it
// before Serve.
func (s *Server) StreamBodies() { s.srv.StreamRequestBody = true }

// Serve accepts connections on ln until Shutdown; it returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for calls in flight and closes connections.
func (s *Server) Shutdown() error { return s.srv.Shutdown() }

func (s *Server) serve(rc *fasthttp.RequestCtx) {
	method, ok := strings.CutPrefix(string(rc.Path()), "/rpc/")
	h := s.mux.m[method]
	if !ok || h == nil || !rc.IsPost() {
		s.fail(rc, Errorf(syscall.ENOSYS, fmt.Sprintf("unknown call %q", rc.Path())))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if v := rc.Request.Header.Peek(credHeader); len(v) > 0 {
		cr, ok := parseCred(string(v))
		if !ok {
			s.fail(rc, Errorf(syscall.EINVAL, fmt.Sprintf("malformed %s header %.40q", credHeader, v)))
			return
		}
		ctx = WithCred(ctx, cr)
	}
	d, _ := s.pool.Get().(*Data)
	if d == nil {
		d = &Data{}
	}
	defer func() { d.n = 0; s.pool.Put(d) }()

	in, release, err := requestBody(rc)
	if err != nil {
		s.fail(rc, Errorf(syscall.EINVAL, "read the request body: "+err.Error()))
		return
	}
	resp, err := h(ctx, in, d)
	release()
	if err != nil {
		s.fail(rc, err)
		return
	}
	body := rc.Response.SwapBody(nil)[:0]
	if d.n == 0 {
		body = appendFrame(body, resp)
	} else {
		hdr := appendFrame(make([]byte, 0, reserve), resp)
		if len(hdr) <= reserve {
			// Put the header right in front of the data in d's buffer and
			// hand that buffer to the response, taking its old body in turn.
			start := reserve - len(hdr)
			copy(d.buf[start:], hdr)
			out := d.buf[start : reserve+d.n]
			d.buf = body
			rc.Response.SwapBody(out)
			return
		}
		body = append(append(body, hdr...), d.buf[reserve:reserve+d.n]...)
	}
	rc.Response.SwapBody(body)
}

// requestBody returns the body of rc's request and a function that
// releases it once the handler is done with it. A large one (a data
// write) is read into a pooled buffer, from the connection straight into
// it after fasthttp's first few KiB.
func requestBody(rc *fasthttp.RequestCtx) ([]byte, func(), error) {
	n := rc.Request.Header.ContentLength()
	stream := rc.RequestBodyStream()
	if n < streamMin || stream == nil {
		return rc.PostBody(), func() {}, nil
	}
	p := getBuf(n)
	if _, err := io.ReadFull(stream, *p); err != nil {
		putBuf(p)
		return nil, nil, err
	}
	return *p, func() { putBuf(p) }, nil
}

func (s *Server) fail(rc *fasthttp.RequestCtx, err error) {
	var re *Error
	if !errors.As(err, &re) {
		re = &Error{Errno: uint32(ToErrno(err)), Msg: err.Error()}
	}
	rc.SetStatusCode(statusOf(re.Errno))
	rc.Response.SetBodyRaw(appendFrame(nil, re))
}
