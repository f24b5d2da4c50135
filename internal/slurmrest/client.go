package slurmrest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is the OpenAPI version the client speaks.
const Version = "v0.0.38"

// Defaults of Config.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 64 << 20 // a /jobs answer of a busy cluster is tens of MB
)

// Config says how to reach slurmrestd.
type Config struct {
	// Endpoint is "unix:/PATH" (rest_auth/local) or "http://HOST:PORT"
	// (rest_auth/jwt, with Token).
	Endpoint string
	// UserName is sent as X-SLURM-USER-NAME when not empty. JWT needs it
	// (the token's user); over a unix socket it may be left empty.
	UserName string
	// Token is sent as X-SLURM-USER-TOKEN when not empty (from
	// `scontrol token username=NAME`).
	Token string
	// Timeout bounds each request, connection included; 0: DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds a response body; 0: DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Validate reports a Config New cannot use.
func (c Config) Validate() error {
	switch {
	case strings.HasPrefix(c.Endpoint, "unix:"):
		if !strings.HasPrefix(strings.TrimPrefix(c.Endpoint, "unix:"), "/") {
			return fmt.Errorf("slurmrest: endpoint %q: want unix:/ABSOLUTE/PATH", c.Endpoint)
		}
	case strings.HasPrefix(c.Endpoint, "http://"), strings.HasPrefix(c.Endpoint, "https://"):
		u, err := url.Parse(c.Endpoint)
		if err != nil || u.Host == "" {
			return fmt.Errorf("slurmrest: endpoint %q: want http://HOST:PORT", c.Endpoint)
		}
	default:
		return fmt.Errorf("slurmrest: endpoint %q: want unix:/PATH or http://HOST:PORT", c.Endpoint)
	}
	if c.Timeout < 0 || c.MaxResponseBytes < 0 {
		return errors.New("slurmrest: negative timeout or response bound")
	}
	if c.Token != "" && c.UserName == "" {
		return errors.New("slurmrest: a token needs the user name it was issued for")
	}
	return nil
}

// Client calls slurmrestd. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base string // scheme://host, without a path
	hc   *http.Client
}

// New returns a client for cfg. It does not connect; Ping does.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	base := strings.TrimRight(cfg.Endpoint, "/")
	if sock, ok := strings.CutPrefix(cfg.Endpoint, "unix:"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}
		base = "http://slurmrestd"
	}
	return &Client{cfg: cfg, base: base, hc: &http.Client{Transport: tr, Timeout: cfg.Timeout}}, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// envelope is what every v0.0.38 answer carries besides its data.
type envelope struct {
	Errors []SlurmError `json:"errors"`
}

// do sends a request to /slurm/v0.0.38/PATH with in (if not nil) as its
// JSON body and decodes the answer into out (if not nil). An HTTP error
// status, or errors in the body, are an *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	path = "/slurm/" + Version + "/" + path
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("slurmrest: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("slurmrest: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.UserName != "" {
		req.Header.Set("X-SLURM-USER-NAME", c.cfg.UserName)
	}
	if c.cfg.Token != "" {
		req.Header.Set("X-SLURM-USER-TOKEN", c.cfg.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("slurmrestd: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("slurmrestd: %s %s: read the answer: %w", method, path, err)
	}
	if int64(len(b)) > c.cfg.MaxResponseBytes {
		return fmt.Errorf("slurmrestd: %s %s: more than %d bytes: %w", method, path, c.cfg.MaxResponseBytes, ErrTooLarge)
	}
	return decodeAnswer(method, path, resp.StatusCode, b, out)
}

// decodeAnswer turns a status and body into out or an *Error.
func decodeAnswer(method, path string, status int, b []byte, out any) error {
	var env envelope
	jsonErr := json.Unmarshal(b, &env)
	if status/100 != 2 || len(env.Errors) > 0 {
		e := &Error{Method: method, Path: path, Status: status, Errors: env.Errors}
		if jsonErr != nil {
			e.Text = firstLine(b)
		}
		return e
	}
	if jsonErr != nil {
		return fmt.Errorf("slurmrestd: %s %s: HTTP %d: not a JSON answer (%v): %s", method, path, status, jsonErr, firstLine(b))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("slurmrestd: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// firstLine is the start of a body for a message: its first line, at most
// 200 bytes.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
