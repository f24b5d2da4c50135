package rpc

import (
	"context"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// freeBody is the largest body read whole without taking from the
// buffered-body budget: the calls of every day (getattr, lookup, create)
// cost no accounting, and connections times this stays small.
const freeBody = 4 << 10

// bodyGrants accounts the request bodies fasthttp reads whole (the calls
// of a server that does not stream: every MDS call, a data server's small
// ones) against ServerConfig.BufferedBodyMemory. fasthttp allocates a body
// of its declared length as soon as its headers are in; unaccounted, N
// connections each sending an allowed 1 MiB body held N MiB, whatever N.
// Here a body waits for room (BodyWait) when its headers arrive, before
// anything is allocated for it, and is refused with EAGAIN ("server
// busy") if none comes.
//
// A grant is given back when its call ends (serve) or fasthttp refuses it
// (transportError); one whose body read failed without either (a
// connection closed at Shutdown) is given back at the next request of its
// RequestCtx, or after ReadTimeout, which bounds reading a body.
type bodyGrants struct {
	mem     *bodyMemory
	wait    time.Duration
	stale   time.Duration
	mu      sync.Mutex
	held    map[*fasthttp.RequestHeader]*grant
	refused map[*fasthttp.RequestHeader]int // declared lengths refused as busy
}

type grant struct {
	n       int64
	at      time.Time
	serving bool // its handler runs: given back when it returns
}

func newBodyGrants(limit int64, wait, stale time.Duration) *bodyGrants {
	return &bodyGrants{
		mem: newBodyMemory(limit), wait: wait, stale: stale,
		held: map[*fasthttp.RequestHeader]*grant{}, refused: map[*fasthttp.RequestHeader]int{},
	}
}

// take reserves the body h declares, waiting up to BodyWait; it reports
// false if the server is too busy (the call is then refused).
func (g *bodyGrants) take(h *fasthttp.RequestHeader) bool {
	g.giveBack(h) // a previous request of this RequestCtx that did not end cleanly
	n := h.ContentLength()
	if n <= freeBody {
		return true
	}
	g.sweep()
	ctx, cancel := context.WithTimeout(context.Background(), g.wait)
	err := g.mem.acquire(ctx, int64(n))
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.refused[h] = n
		return false
	}
	g.held[h] = &grant{n: int64(n), at: time.Now()}
	return true
}

// busy reports whether h's call was refused by take, and its length.
func (g *bodyGrants) busy(h *fasthttp.RequestHeader) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.refused[h]
	delete(g.refused, h)
	return n, ok
}

// serving marks h's grant as in use by its handler.
func (g *bodyGrants) serving(h *fasthttp.RequestHeader) {
	g.mu.Lock()
	if gr := g.held[h]; gr != nil {
		gr.serving = true
	}
	g.mu.Unlock()
}

// giveBack releases h's grant, if any, and reports whether there was one.
func (g *bodyGrants) giveBack(h *fasthttp.RequestHeader) bool {
	g.mu.Lock()
	gr := g.held[h]
	delete(g.held, h)
	delete(g.refused, h)
	g.mu.Unlock()
	if gr != nil {
		g.mem.release(gr.n)
	}
	return gr != nil
}

// done ends the call of rc: its grant is given back and a counted body's
// buffer goes back to fasthttp's pool for the next call to reuse. Left in
// the connection's RequestCtx, which fasthttp pools in turn, every
// connection that ever sent a large body kept it: the budget bounded what
// was read at once, not what stayed resident.
func (g *bodyGrants) done(rc *fasthttp.RequestCtx) {
	if g.giveBack(&rc.Request.Header) {
		rc.Request.ResetBody()
	}
}

// sweep releases the grants of bodies no longer being read nor served:
// older than the time a body may take to arrive.
func (g *bodyGrants) sweep() {
	now := time.Now()
	var n int64
	g.mu.Lock()
	for h, gr := range g.held {
		if !gr.serving && now.Sub(gr.at) > g.stale {
			n += gr.n
			delete(g.held, h)
		}
	}
	g.mu.Unlock()
	if n > 0 {
		g.mem.release(n)
	}
}
