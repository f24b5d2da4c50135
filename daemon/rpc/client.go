package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// ClientConfig tunes a Client.
type ClientConfig struct {
	Timeout         time.Duration // per call when ctx has no deadline; default 30s
	MaxConnsPerHost int           // keep-alive pool size per peer; default 64
	// Auth returns the Authorization header of a call made in ctx (the
	// caller's credential, identity.Credentials); nil or "" sends none.
	Auth func(ctx context.Context) (string, error)
	// TLS, if set, is the TLS every call speaks (TLSFiles.ClientConfig);
	// nil: plain HTTP.
	TLS *tls.Config
}

type authKey struct{}

// WithAuthorization returns ctx whose calls carry the Authorization header
// v instead of ClientConfig.Auth's (opening a session with a MUNGE
// credential).
func WithAuthorization(ctx context.Context, v string) context.Context {
	return context.WithValue(ctx, authKey{}, v)
}

// authorization returns the Authorization header of a call made in ctx.
// AuthorizationFrom returns the Authorization header ctx carries
// (WithAuthorization), if any.
func AuthorizationFrom(ctx context.Context) (string, bool) {
	v, ok := ctx.Value(authKey{}).(string)
	return v, ok
}

func (c *Client) authorization(ctx context.Context) (string, error) {
	if v, ok := ctx.Value(authKey{}).(string); ok {
		return v, nil
	}
	if c.cfg.Auth == nil {
		return "", nil
	}
	v, err := c.cfg.Auth(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCredential, err)
	}
	return v, nil
}

// Client calls Servers. It keeps one keep-alive pool per peer address and
// is safe for concurrent use.
type Client struct {
	cfg   ClientConfig
	mu    sync.Mutex
	hosts map[string]*fasthttp.HostClient
	bufs  sync.Pool // *[]byte request bodies
	moved atomic.Uint64
}

// DataBytes returns the data payload bytes (a call's data and its reply's,
// not the messages) the Client has sent and received since it was made:
// how much file data passed through the process that owns it.
func (c *Client) DataBytes() uint64 { return c.moved.Load() }

// NewClient returns a Client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxConnsPerHost == 0 {
		cfg.MaxConnsPerHost = 64
	}
	return &Client{cfg: cfg, hosts: map[string]*fasthttp.HostClient{}}
}

func (c *Client) host(addr string) *fasthttp.HostClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	hc := c.hosts[addr]
	if hc == nil {
		hc = &fasthttp.HostClient{
			Addr:                          addr,
			MaxConns:                      c.cfg.MaxConnsPerHost,
			MaxIdleConnDuration:           90 * time.Second,
			ReadBufferSize:                16 << 10,
			WriteBufferSize:               64 << 10,
			MaxResponseBodySize:           MaxBody,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			MaxConnWaitTimeout:            c.cfg.Timeout,
			// Every pooled connection may be stale after a peer restart:
			// each is tried (and dropped) in turn, then a fresh one.
			MaxIdemponentCallAttempts: c.cfg.MaxConnsPerHost + 2,
			RetryIfErr:                retryStale,
			IsTLS:                     c.cfg.TLS != nil,
			TLSConfig:                 c.cfg.TLS,
		}
		c.hosts[addr] = hc
	}
	return hc
}

// Close drops idle connections. Calls in flight finish.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, hc := range c.hosts {
		hc.CloseIdleConnections()
	}
}

// Call sends req to method at addr and decodes the reply into resp.
func (c *Client) Call(ctx context.Context, addr, method string, req, resp any) error {
	_, err := c.CallData(ctx, addr, method, req, nil, resp, nil)
	return err
}

// CallData sends req followed by data, decodes the reply into resp, and
// copies reply data into out, returning how many bytes it copied. A remote
// failure is an *Error; a transport failure wraps ErrUnavailable.
func (c *Client) CallData(ctx context.Context, addr, method string, req any, data []byte, resp any, out []byte) (int, error) {
	return c.CallVec(ctx, addr, method, req, [][]byte{data}, resp, [][]byte{out})
}

// CallVec is CallData with the request data given as pieces sent back to
// back, and the reply data scattered over the pieces of out in order.
func (c *Client) CallVec(ctx context.Context, addr, method string, req any, data [][]byte, resp any, out [][]byte) (int, error) {
	return c.call(ctx, addr, method, req, data, resp, out, nil)
}

// CallRead is CallVec for a call that sends no data, with landed, if not
// nil, told how many bytes of out hold reply data each time more of it
// arrives (resp is decoded by then), so that the caller can check the
// bytes while they are still in the CPU's caches instead of in a second
// pass over memory. The last call's count is the one CallRead returns.
func (c *Client) CallRead(ctx context.Context, addr, method string, req, resp any, out [][]byte, landed func(n int)) (int, error) {
	return c.call(ctx, addr, method, req, nil, resp, out, landed)
}

func (c *Client) call(ctx context.Context, addr, method string, req any, data [][]byte, resp any, out [][]byte, landed func(int)) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.cfg.Timeout)
	}
	auth, err := c.authorization(ctx)
	if err != nil {
		return 0, err
	}
	hreq := fasthttp.AcquireRequest()
	hresp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(hreq)
	defer fasthttp.ReleaseResponse(hresp)

	for _, d := range data {
		c.moved.Add(uint64(len(d)))
	}
	hreq.Header.SetMethod(fasthttp.MethodPost)
	scheme := "http://"
	if c.cfg.TLS != nil {
		scheme = "https://"
	}
	hreq.SetRequestURI(scheme + addr + "/rpc/" + method)
	if cr, ok := CredFrom(ctx); ok {
		hreq.Header.Set(credHeader, formatCred(cr))
	}
	if auth != "" {
		hreq.Header.Set(fasthttp.HeaderAuthorization, auth)
	}
	// A large reply is read from the connection straight into out
	// (readReply), not into a body buffer fasthttp would allocate for it.
	stream := 0
	for _, o := range out {
		stream += len(o)
	}
	hresp.StreamBody = stream >= streamMin
	err = c.do(addr, hreq, hresp, req, data, deadline)
	if err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%w: %s %s: %v", ErrUnavailable, addr, method, err)
	}
	if code := hresp.StatusCode(); hresp.StreamBody && code >= 200 && code <= 299 {
		n, err := readReply(hresp.BodyStream(), resp, out, landed)
		if cerr := hresp.CloseBodyStream(); err == nil && cerr != nil {
			err = cerr
		}
		c.moved.Add(uint64(n))
		if err != nil {
			return 0, fmt.Errorf("%w: %s %s: reply: %v", ErrUnavailable, addr, method, err)
		}
		return n, nil
	}
	n, err := decodeReply(hresp.StatusCode(), hresp.Body(), resp, out)
	c.moved.Add(uint64(n))
	if err != nil {
		var re *Error
		if !errors.As(err, &re) {
			return 0, fmt.Errorf("%s %s: %w", addr, method, err)
		}
		return n, err
	}
	if landed != nil && n > 0 {
		landed(n)
	}
	return n, nil
}

// do sends hreq with the frame of req and data as its body and waits for
// the reply. Small bodies are assembled in one pooled buffer. Large data
// goes out from the caller's pieces as they are (vecBody): no copy of the
// bytes on the way to the connection. fasthttp retries no streamed body,
// so do repeats such a call itself where fasthttp would have (retryStale:
// a dead keep-alive connection); data calls are idempotent.
func (c *Client) do(addr string, hreq *fasthttp.Request, hresp *fasthttp.Response, req any, data [][]byte, deadline time.Time) error {
	n := 0
	for _, d := range data {
		n += len(d)
	}
	hc := c.host(addr)
	if n < streamMin {
		bp, _ := c.bufs.Get().(*[]byte)
		if bp == nil {
			bp = new([]byte)
		}
		body := appendFrame((*bp)[:0], req)
		for _, d := range data {
			body = append(body, d...)
		}
		hreq.SetBodyRaw(body)
		err := hc.DoDeadline(hreq, hresp, deadline)
		*bp = body[:0]
		c.bufs.Put(bp)
		return err
	}
	vb := getVecBody()
	// fasthttp closes and forgets the stream once it has written it, but
	// not if the call failed before: hreq must not keep vb once it is back
	// in the pool, where a server's reply may take it (and its Close then
	// be that reply's).
	defer func() { hreq.ResetBody(); vb.put() }()
	vb.frame = appendFrame(vb.frame[:0], req)
	vb.pieces = append(append(vb.pieces, vb.frame), data...)
	size := vb.size()
	for attempt := 1; ; attempt++ {
		vb.rewind()
		hreq.SetBodyStream(vb, size)
		err := hc.DoDeadline(hreq, hresp, deadline)
		if err == nil || attempt >= hc.MaxIdemponentCallAttempts || time.Now().After(deadline) {
			return err
		}
		if _, retry := retryStale(hreq, attempt, err); !retry {
			return err
		}
	}
}

// decodeReply decodes a reply held whole: a 2xx status's frame into resp,
// its data copied into the pieces of out (it returns how many bytes); any
// other status's into the *Error it returns, or an ErrUnavailable error if
// the body is not a wire error.
func decodeReply(code int, rb []byte, resp any, out [][]byte) (int, error) {
	if code < 200 || code > 299 {
		re := &Error{}
		if _, err := splitFrame(rb, re); err != nil {
			return 0, fmt.Errorf("%w: status %d", ErrUnavailable, code)
		}
		return 0, re
	}
	rest, err := splitFrame(rb, resp)
	if err != nil {
		return 0, fmt.Errorf("reply: %w", err)
	}
	n := 0
	for _, o := range out {
		if len(rest) == 0 {
			break
		}
		k := copy(o, rest)
		rest = rest[k:]
		n += k
	}
	return n, nil
}

// readReply reads a reply frame from r: the header into resp, then the
// data into the pieces of out in order, telling landed (if not nil) how
// many bytes it holds after each read that added some; it returns how
// many data bytes it read (fewer than out holds if the reply is shorter)
// and drains the rest.
func readReply(r io.Reader, resp any, out [][]byte, landed func(int)) (int, error) {
	hl, err := readFrameStart(r)
	if err != nil {
		return 0, err
	}
	if hl > maxFrameHeader {
		return 0, fmt.Errorf("%w: bad frame header length", ErrDecode)
	}
	hdr := make([]byte, hl)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return 0, err
	}
	if err := Unmarshal(hdr, resp); err != nil {
		return 0, err
	}
	n := 0
	for _, o := range out {
		for len(o) > 0 {
			// Each read lands what the connection holds, straight into
			// o (a large read bypasses the connection's buffer).
			k, err := r.Read(o)
			o, n = o[k:], n+k
			if k > 0 && landed != nil {
				landed(n)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
		}
	}
	_, err = io.Copy(io.Discard, r)
	return n, err
}

// maxFrameHeader bounds a reply header read from a stream.
const maxFrameHeader = 1 << 20

// byteReader reads one byte at a time from r (a frame's length).
type byteReader struct{ r io.Reader }

func (b byteReader) ReadByte() (byte, error) {
	var p [1]byte
	_, err := io.ReadFull(b.r, p[:])
	return p[0], err
}

// retryStale repeats a call when its connection turned out to be dead
// before any reply byte arrived: a keep-alive connection the peer closed
// (a restarted data server or MDS), reset or broken. Data server calls are
// idempotent; an MDS call that a crashing MDS might have applied is the
// ambiguity every failover has (client/failover.go).
func retryStale(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	stale := errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return false, stale
}
