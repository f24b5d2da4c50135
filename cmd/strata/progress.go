package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress draws a one-line progress bar, redrawn by a goroutine it owns
// until finish. A nil *progress draws nothing; its methods are no-ops.
type progress struct {
	w     io.Writer
	name  string
	total int64
	start time.Time
	n     atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

// progressTick is how often the bar is redrawn.
const progressTick = 200 * time.Millisecond

// newProgress starts a bar on w for a transfer of total bytes; nil w
// means no bar.
func newProgress(w io.Writer, name string, total int64) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, name: name, total: total, start: time.Now(), stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
	return p
}

func (p *progress) add(n int) {
	if p != nil {
		p.n.Add(int64(n))
	}
}

// finish stops the redrawing goroutine, waits for it and draws the last
// state: the full bar and a newline on success, the bar cleared otherwise.
func (p *progress) finish(ok bool) {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if ok {
		p.draw()
		fmt.Fprintln(p.w)
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}

func (p *progress) draw() {
	n := p.n.Load()
	secs := time.Since(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(n) / secs
	}
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(n)/float64(p.total), 1)
	}
	fill := int(frac * width)
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	name := p.name
	if len(name) > 24 {
		name = name[:21] + "..."
	}
	fmt.Fprintf(p.w, "\r%-24s [%s] %3.0f%% %7s / %-7s %7s/s", name, bar, frac*100,
		humanSize(uint64(n)), humanSize(uint64(max(p.total, 0))), humanSize(uint64(rate)))
}

// countingReader counts the bytes read through it into a progress bar.
type countingReader struct {
	r io.Reader
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(n)
	return n, err
}

// countingWriter counts the bytes written through it into a progress bar.
type countingWriter struct {
	w io.Writer
	p *progress
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.add(n)
	return n, err
}
