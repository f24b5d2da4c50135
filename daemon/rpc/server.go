package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
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
	buf []byte  // a small reply's bytes, reused by the next call
	big *[]byte // a large reply's, from the pool (bufpool.go)
	n   int
	hdr []byte // a streamed request's header (scratch)

	// A direct reply's (direct.go): the call's plain TCP connection (nil:
	// none may be sent), the reply's segments, the pooled buffers among
	// them, and what runs once it is sent.
	conn  *net.TCPConn
	segs  []segment
	held  []*[]byte
	after []func()
}

// Buffer returns a slice of length n for the handler to fill. A large one
// comes from the transport's pool and is written to the connection from
// where it is (reply), then pooled again.
func (d *Data) Buffer(n int) []byte {
	if n >= streamMin {
		if d.big != nil {
			putBuf(d.big)
		}
		d.big = getBuf(n)
		return *d.big
	}
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	d.buf = d.buf[:n]
	return d.buf
}

// data returns the committed reply bytes.
func (d *Data) data() []byte {
	if d.big != nil {
		return (*d.big)[:d.n]
	}
	return d.buf[:d.n]
}

// reset drops what a call left in d, before d is pooled; a large buffer
// or a direct reply not handed to a reply is released.
func (d *Data) reset() {
	d.n = 0
	d.conn = nil
	if d.big != nil {
		putBuf(d.big)
		d.big = nil
	}
	d.releaseDirect()
}

// Commit records that the first n bytes of the Buffer are the reply.
func (d *Data) Commit(n int) { d.n = n }

// scratch returns a slice of length n (at most MaxFraming) for a request
// header, reused by the next call that gets the same Data.
func (d *Data) scratch(n int) []byte {
	if cap(d.hdr) < n {
		d.hdr = make([]byte, n)
	}
	return d.hdr[:n]
}

// handler is one registered method. decode reads the request message
// from a frame's header and runs the method's guard on it; run serves
// the decoded request with the data that followed the header.
type handler struct {
	data   bool // a data call (HandleData): its class's body limit applies
	limit  int  // the method's own body limit; 0 = its class's
	decode func(hdr []byte) (any, error)
	guard  func(req any) error
	run    func(ctx context.Context, req any, in []byte, d *Data) (any, error)
}

// Mux routes method names to handlers. Register everything before Serve.
type Mux struct {
	m map[string]*handler
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{m: map[string]*handler{}} }

func decodeFor[Req any](method string) func([]byte) (any, error) {
	return func(hdr []byte) (any, error) {
		req := new(Req)
		if err := Unmarshal(hdr, req); err != nil {
			return nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: %v", method, err))
		}
		return req, nil
	}
}

// Handle registers a call that takes and returns a message.
func Handle[Req, Resp any](m *Mux, method string, fn func(context.Context, *Req) (*Resp, error)) {
	m.m[method] = &handler{
		decode: decodeFor[Req](method),
		run: func(ctx context.Context, req any, _ []byte, _ *Data) (any, error) {
			return fn(ctx, req.(*Req))
		},
	}
}

// HandleData registers a call whose request and reply carry raw bytes
// after the message. in is valid only during fn.
func HandleData[Req, Resp any](m *Mux, method string, fn func(ctx context.Context, req *Req, in []byte, out *Data) (*Resp, error)) {
	m.m[method] = &handler{
		data:   true,
		decode: decodeFor[Req](method),
		run: func(ctx context.Context, req any, in []byte, d *Data) (any, error) {
			return fn(ctx, req.(*Req), in, d)
		},
	}
}

// Guard has method's request checked by check as soon as its message is
// decoded: on a server that streams bodies, before the data that follows
// is read or memory taken for it (a data server checks the capability
// there). A refused call's body is not read; its connection is closed.
// method must be registered, with request type Req.
func Guard[Req any](m *Mux, method string, check func(*Req) error) {
	m.m[method].guard = func(req any) error { return check(req.(*Req)) }
}

// Limit sets method's largest request body, in place of its class's.
func (m *Mux) Limit(method string, n int) { m.m[method].limit = n }

// Authenticator checks the credential of a call to method (the value of
// its Authorization header, nil if none) from peer, and returns the
// context the handler runs in (carrying the caller's identity), or an
// error the caller receives instead of a reply (EACCES unless it is an
// *Error). auth is valid only during the call.
type Authenticator func(ctx context.Context, method string, auth []byte, peer netip.Addr) (context.Context, error)

// Server serves a Mux over HTTP/1.1 with fasthttp.
type Server struct {
	auth Authenticator
	tls  *tls.Config // nil: plain HTTP
	mux  *Mux
	cfg  ServerConfig
	log  *slog.Logger
	srv  *fasthttp.Server
	mem  *bodyMemory
	bufd *bodyGrants // bodies read whole (bodygrant.go)
	pool sync.Pool   // *Data
}

// NewServer returns a server for mux, bounded by cfg (zero fields take
// their defaults).
func NewServer(mux *Mux, log *slog.Logger, cfg ServerConfig) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{mux: mux, cfg: cfg, log: log, mem: newBodyMemory(cfg.BodyMemory),
		bufd: newBodyGrants(cfg.BufferedBodyMemory, cfg.BodyWait, 2*cfg.ReadTimeout)}
	s.srv = &fasthttp.Server{
		Handler:               s.serve,
		HeaderReceived:        s.headerReceived,
		ErrorHandler:          s.transportError,
		MaxRequestBodySize:    cfg.MaxMetaBody,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		MaxConnsPerIP:         cfg.MaxConnsPerPeer,
		Concurrency:           cfg.MaxConns,
		ReadBufferSize:        16 << 10,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		// fasthttp's own lines (connection errors, warnings) go through
		// the daemon's logger: structured, and rate-limited when repeated.
		Logger: logging.Printf(log, slog.LevelWarn, "fasthttp"),
	}
	return s, nil
}

// StreamBodies has the server read request bodies from the connection
// itself, after the call's message is decoded and its guard passed, into
// buffers from the bounded pool (BodyMemory) rather than into buffers
// fasthttp allocates for each: for a data server, whose writes carry MiBs.
// Not for small calls: streaming costs them a third of their rate
// (fasthttp's stream object and prefetch on every request). Call it before
// Serve.
func (s *Server) StreamBodies() { s.srv.StreamRequestBody = true }

// Authenticate has every call checked by fn before its handler runs.
// Call it before Serve.
func (s *Server) Authenticate(fn Authenticator) { s.auth = fn }

// UseTLS has the server speak TLS with c on every connection it accepts
// (TLSFiles.ServerConfig): a caller that does not, or presents a
// certificate c does not accept, is refused in the handshake. Call it
// before Serve.
func (s *Server) UseTLS(c *tls.Config) { s.tls = c }

// Serve accepts connections on ln until Shutdown; it returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	err := s.srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for calls in flight and closes connections.
func (s *Server) Shutdown() error { return s.srv.Shutdown() }

// BodyMemory returns the bytes of request bodies held now and the most
// ever held at once.
func (s *Server) BodyMemory() (used, peak int64) { return s.mem.stats() }

// BufferedBodyMemory returns the bytes of bodies read whole held now and
// the most ever held at once.
func (s *Server) BufferedBodyMemory() (used, peak int64) { return s.bufd.mem.stats() }

// limit returns the largest request body of h.
func (s *Server) limit(h *handler) int {
	switch {
	case h == nil:
		return s.cfg.MaxMetaBody
	case h.limit > 0:
		return h.limit
	case h.data:
		return s.cfg.MaxDataBody
	}
	return s.cfg.MaxMetaBody
}

// method returns the handler a request path names, or nil.
func (s *Server) method(path []byte) (string, *handler) {
	method, ok := strings.CutPrefix(string(path), "/rpc/")
	if !ok {
		return method, nil
	}
	return method, s.mux.m[method]
}

// headerReceived sets the body limit and read timeout of a request from
// its method, before fasthttp reads (or, unstreamed, allocates) its body.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	_, hd := s.method(h.RequestURI())
	rc := fasthttp.RequestConfig{MaxRequestBodySize: s.limit(hd)}
	if hd != nil && hd.data {
		rc.ReadTimeout = s.cfg.DataReadTimeout
	}
	// A body read whole waits for room in its budget; refused, fasthttp
	// allocates nothing for it (transportError says the server is busy).
	if !s.srv.StreamRequestBody && h.ContentLength() <= rc.MaxRequestBodySize && !s.bufd.take(h) {
		rc.MaxRequestBodySize = 1
	}
	return rc
}

// transportError answers a request fasthttp refused before the handler
// (a body over its limit, a timeout, a malformed request) with a wire
// error, so that a client can tell the user why.
func (s *Server) transportError(rc *fasthttp.RequestCtx, err error) {
	defer s.bufd.done(rc)
	errno := syscall.EINVAL
	msg := "bad request: " + err.Error()
	busyLen, busy := s.bufd.busy(&rc.Request.Header)
	switch {
	case busy:
		method, _ := s.method(rc.Request.Header.RequestURI())
		errno = syscall.EAGAIN
		msg = fmt.Sprintf("%s: server busy: no memory for a %d-byte body within %v", method, busyLen, s.cfg.BodyWait)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		method, hd := s.method(rc.Request.Header.RequestURI())
		errno = syscall.E2BIG
		msg = fmt.Sprintf("%s: request body of %d bytes exceeds the limit of %d", method, rc.Request.Header.ContentLength(), s.limit(hd))
	case isTimeout(err):
		errno = syscall.ETIMEDOUT
		msg = "request not received in time: " + err.Error()
	}
	rc.SetStatusCode(statusOf(uint32(errno)))
	rc.Response.SetBodyRaw(appendFrame(nil, Errorf(errno, msg)))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (s *Server) serve(rc *fasthttp.RequestCtx) {
	s.bufd.serving(&rc.Request.Header)
	defer s.bufd.done(rc)
	method, h := s.method(rc.Path())
	if h == nil || !rc.IsPost() {
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
	if s.auth != nil {
		var err error
		ctx, err = s.auth(ctx, method, rc.Request.Header.Peek(fasthttp.HeaderAuthorization), peerAddr(rc))
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				err = Errorf(syscall.EACCES, err.Error())
			}
			s.fail(rc, err)
			return
		}
	}
	d, _ := s.pool.Get().(*Data)
	if d == nil {
		d = &Data{}
	}
	defer func() { d.reset(); s.pool.Put(d) }()
	if h.data && s.tls == nil {
		d.conn = tcpConn(rc.Conn())
	}

	var req any
	var in []byte
	var err error
	if stream := rc.RequestBodyStream(); stream != nil {
		var release func()
		req, in, release, err = s.readStreamed(ctx, rc, method, h, stream, d)
		if err != nil {
			rc.SetConnectionClose() // what is left of the body is not read
			s.fail(rc, err)
			return
		}
		defer release()
	} else {
		req, in, err = s.decodeBuffered(rc.PostBody(), h)
		if err != nil {
			s.fail(rc, err)
			return
		}
	}
	resp, err := h.run(ctx, req, in, d)
	if err != nil {
		s.fail(rc, err)
		return
	}
	s.reply(rc, resp, d)
}

// decodeBuffered decodes a body fasthttp read whole (within the method's
// limit) and runs the guard.
func (s *Server) decodeBuffered(body []byte, h *handler) (any, []byte, error) {
	hdr, in, err := frameHeader(body)
	if err != nil {
		return nil, nil, Errorf(syscall.EINVAL, err.Error())
	}
	req, err := h.decode(hdr)
	if err != nil {
		return nil, nil, err
	}
	if h.guard != nil {
		if err := h.guard(req); err != nil {
			return nil, nil, err
		}
	}
	return req, in, nil
}

// readStreamed reads a streamed request: the frame header, the message,
// the guard's verdict, and only then the data, into memory taken from the
// bounded pool (released by the returned function).
func (s *Server) readStreamed(ctx context.Context, rc *fasthttp.RequestCtx, method string, h *handler, stream io.Reader, d *Data) (any, []byte, func(), error) {
	n := rc.Request.Header.ContentLength()
	limit := s.limit(h)
	switch {
	case n < 0:
		return nil, nil, nil, Errorf(syscall.EINVAL, method+": a request body needs a Content-Length")
	case n > limit:
		return nil, nil, nil, Errorf(syscall.E2BIG, fmt.Sprintf("%s: request body of %d bytes exceeds the limit of %d", method, n, limit))
	}
	br := &countingReader{r: stream}
	hl, err := readFrameStart(br)
	if err != nil {
		return nil, nil, nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: %v", method, err))
	}
	if hl > uint64(n-br.n) || hl > MaxFraming {
		return nil, nil, nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: %v: bad frame header length", method, ErrDecode))
	}
	hdr := d.scratch(int(hl))
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, nil, nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: read the request: %v", method, err))
	}
	req, err := h.decode(hdr)
	if err != nil {
		return nil, nil, nil, err
	}
	if h.guard != nil {
		if err := h.guard(req); err != nil {
			return nil, nil, nil, err
		}
	}
	rest := n - br.n
	if rest == 0 {
		return req, nil, func() {}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.BodyWait)
	err = s.mem.acquire(wctx, int64(rest))
	cancel()
	if err != nil {
		return nil, nil, nil, Errorf(syscall.EAGAIN, fmt.Sprintf("%s: server busy: no memory for a %d-byte body within %v", method, rest, s.cfg.BodyWait))
	}
	p := getBuf(rest)
	release := func() { putBuf(p); s.mem.release(int64(rest)) }
	if _, err := io.ReadFull(br, *p); err != nil {
		release()
		return nil, nil, nil, Errorf(syscall.EINVAL, fmt.Sprintf("%s: read the request body: %v", method, err))
	}
	return req, *p, release, nil
}

// reply writes resp and the data the handler committed to d. A large
// reply's data is not copied into a body: the frame header and the data
// go to the connection as a vecBody, and its buffer returns to the pool
// once fasthttp has written (or dropped) the reply.
func (s *Server) reply(rc *fasthttp.RequestCtx, resp any, d *Data) {
	if len(d.segs) > 0 || len(d.after) > 0 {
		s.replyDirect(rc, resp, d)
		return
	}
	if d.big != nil && d.n > 0 {
		vb := getVecBody()
		vb.frame = appendFrame(vb.frame[:0], resp)
		big := d.big
		d.big = nil
		vb.pieces = append(vb.pieces, vb.frame, (*big)[:d.n])
		vb.done = func() { putBuf(big); vb.put() }
		rc.Response.SetBodyStream(vb, vb.size())
		return
	}
	body := appendFrame(rc.Response.SwapBody(nil)[:0], resp)
	rc.Response.SwapBody(append(body, d.data()...))
}

// replyDirect writes resp and the segments of a direct reply: the
// headers flushed first, then the body written to the connection by
// directBody. What the reply holds is released once fasthttp has written
// (or dropped) it.
func (s *Server) replyDirect(rc *fasthttp.RequestCtx, resp any, d *Data) {
	b := &directBody{conn: d.conn}
	b.frame = appendFrame(nil, resp)
	b.segs = append(append(make([]segment, 0, len(d.segs)+1), segment{mem: b.frame}), d.segs...)
	held, after := d.held, d.after
	d.held, d.segs, d.after = nil, nil, nil
	b.done = func() {
		for _, p := range held {
			putBuf(p)
		}
		for _, fn := range after {
			fn()
		}
	}
	rc.Response.ImmediateHeaderFlush = b.conn != nil
	rc.Response.SetBodyStream(b, b.size())
}

// peerAddr returns the IP address a request came from.
func peerAddr(rc *fasthttp.RequestCtx) netip.Addr {
	if a, ok := rc.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

func (s *Server) fail(rc *fasthttp.RequestCtx, err error) {
	var re *Error
	if !errors.As(err, &re) {
		re = &Error{Errno: uint32(ToErrno(err)), Msg: err.Error()}
	}
	rc.SetStatusCode(statusOf(re.Errno))
	rc.Response.SetBodyRaw(appendFrame(nil, re))
}

// Dispatch serves one request held in memory as if it had arrived on a
// connection (within the method's body limit) and returns the reply's
// status and body: for fuzzing the handlers behind the router without a
// network. auth, if given, is the request's Authorization header.
func (s *Server) Dispatch(method string, body []byte, auth ...string) (int, []byte) {
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodPost)
	if len(auth) > 0 {
		req.Header.Set(fasthttp.HeaderAuthorization, auth[0])
	}
	req.SetRequestURI("/rpc/" + method)
	req.SetBody(body)
	var rc fasthttp.RequestCtx
	rc.Init(&req, nil, s.srv.Logger)
	if _, h := s.method(rc.Path()); len(body) > s.limit(h) {
		s.transportError(&rc, fasthttp.ErrBodyTooLarge)
	} else {
		s.serve(&rc)
	}
	return rc.Response.StatusCode(), append([]byte(nil), rc.Response.Body()...)
}

// Methods returns the names of the registered methods, sorted.
func (m *Mux) Methods() []string {
	out := make([]string, 0, len(m.m))
	for k := range m.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Methods returns the names of the methods the server serves, sorted.
func (s *Server) Methods() []string { return s.mux.Methods() }
