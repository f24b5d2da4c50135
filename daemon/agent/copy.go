package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"
)

// castagnoli is the CRC32C table every stage-in and drain checksum uses
// (the same polynomial the data servers keep per block).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// copyBuf is the size of one read or write of a copy: big enough that a
// striped file's read spans several data servers at once.
const copyBuf = 4 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBuf); return &b }}

// copyRange copies n bytes at off from src to dst and returns the CRC32C
// of the bytes copied. Reading and writing overlap (one buffer ahead).
// With skipZeros, buffers that are all zeros are not written (the
// destination reads them back as a hole), except the one that ends the
// range, so that the destination reaches the range's end. lim,
// if not nil, paces the bytes. It stops at ctx's end.
func copyRange(ctx context.Context, dst io.WriterAt, src io.ReaderAt, off, n int64, skipZeros bool, lim *limiter) (uint32, error) {
	type chunk struct {
		buf *[]byte
		off int64
		n   int
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	full := make(chan chunk, 2)
	var rerr error
	var crc uint32
	go func() {
		defer close(full)
		for pos := off; pos < off+n; {
			if err := ctx.Err(); err != nil {
				rerr = err
				return
			}
			bp := bufPool.Get().(*[]byte)
			want := int(min(int64(copyBuf), off+n-pos))
			if err := lim.wait(ctx, want); err != nil {
				bufPool.Put(bp)
				rerr = err
				return
			}
			k, err := src.ReadAt((*bp)[:want], pos)
			if k < want && (err == nil || errors.Is(err, io.EOF)) {
				err = fmt.Errorf("read %d bytes at %d: got %d: %w", want, pos, k, io.ErrUnexpectedEOF)
			}
			if err != nil {
				bufPool.Put(bp)
				rerr = err
				return
			}
			crc = crc32.Update(crc, castagnoli, (*bp)[:k])
			full <- chunk{bp, pos, k}
			pos += int64(k)
		}
	}()
	var werr error
	for c := range full {
		last := c.off+int64(c.n) == off+n
		if werr == nil && (last || !skipZeros || !allZero((*c.buf)[:c.n])) {
			if _, err := dst.WriteAt((*c.buf)[:c.n], c.off); err != nil {
				werr = fmt.Errorf("write %d bytes at %d: %w", c.n, c.off, err)
				cancel() // stop reading
			}
		}
		bufPool.Put(c.buf)
	}
	if werr != nil {
		return 0, werr
	}
	if rerr != nil {
		return 0, &readError{fmt.Errorf("read: %w", rerr)}
	}
	return crc, nil
}

// readError marks a failure on the read side of a copy.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// checksumRange returns the CRC32C of n bytes of r at off.
func checksumRange(ctx context.Context, r io.ReaderAt, off, n int64) (uint32, error) {
	return copyRange(ctx, discardAt{}, r, off, n, true, nil)
}

type discardAt struct{}

func (discardAt) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// limiter is a token bucket of bytes per second shared by the drain
// workers of a node (the QoS issue will pace drains by the cluster's
// bandwidth instead). A nil limiter does not limit.
type limiter struct {
	mu     sync.Mutex
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
}

// newLimiter returns a limiter of rate bytes per second, nil for 0.
func newLimiter(rate int64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{rate: float64(rate), tokens: float64(rate) / 10, last: time.Now()}
}

// wait takes n bytes from the bucket, waiting as long as the rate says.
func (l *limiter) wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*l.rate, l.rate)
	l.last = now
	l.tokens -= float64(n)
	var d time.Duration
	if l.tokens < 0 {
		d = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
