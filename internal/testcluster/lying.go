package testcluster

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// WithLyingDS puts data server id behind a proxy that returns other bytes
// than it stored: in the data of every read reply one byte is flipped,
// the reply's header (size, checksums) left as the server sent it. It is
// the fault of a data server whose memory, network or code corrupts what
// it serves, which a real one cannot be made to produce on demand. The
// data server advertises the proxy's address, so clients and the MDS
// reach it only through it. lies counts the replies changed.
func WithLyingDS(t testing.TB, id string, lies *atomic.Int64) Option {
	return WithLyingDSFor(t, id, lies, 0)
}

// WithLyingDSFor is WithLyingDS for the first n read replies only (0:
// every one): a fault in transit that the reads after it do not meet.
func WithLyingDSFor(t testing.TB, id string, lies *atomic.Int64, n int64) Option {
	return func(o *localcluster.Options) {
		prev := o.DSConfig
		o.DSConfig = func(c *ds.Config) {
			if prev != nil {
				prev(c)
			}
			if c.ID != id {
				return
			}
			c.Advertise = startLiar(t, c.Listen, lies, n)
		}
	}
}

// startLiar serves a corrupting reverse proxy of the data server at
// target, which changes n replies (0: all), and returns its address.
func startLiar(t testing.TB, target string, lies *atomic.Int64, n int64) string {
	var budget atomic.Int64
	budget.Store(n)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("lying proxy: %v", err)
	}
	p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	p.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode != http.StatusOK || !strings.HasSuffix(r.Request.URL.Path, "/"+rpc.DRead) {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		// [version][uvarint header length][header][data]
		if hl, k := binary.Uvarint(body[1:]); k > 0 {
			if data := 1 + k + int(hl); data < len(body) && (n <= 0 || budget.Add(-1) >= 0) {
				body[data+(len(body)-data)/2] ^= 0x40
				lies.Add(1)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
