package logging

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultEvery is how often a repeating warning or error is logged.
const DefaultEvery = 10 * time.Second

// maxKeys bounds the messages the limiter remembers.
const maxKeys = 4096

// RateOptions tunes RateLimit.
type RateOptions struct {
	// Every is the shortest interval between two lines of one repeating
	// warning or error; DefaultEvery if zero.
	Every time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
}

// RateLimit wraps h so that a warning or error (level >= warn) that
// repeats, the same message with the same "err" attribute from the same
// logger, is logged at most once per opts.Every. The first line after a
// quiet spell carries repeated=N, the number of lines dropped since the
// last one logged. Debug and info lines pass untouched: a request's detail
// belongs at debug, where nothing is dropped.
func RateLimit(h slog.Handler, opts RateOptions) slog.Handler {
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &rateHandler{next: h, st: &rateState{opts: opts, seen: map[string]*seen{}}}
}

type rateHandler struct {
	next  slog.Handler
	st    *rateState
	scope string // the attributes and groups of this logger, part of the key
}

type rateState struct {
	opts RateOptions
	mu   sync.Mutex
	seen map[string]*seen
}

type seen struct {
	last    time.Time // when it was last logged
	dropped int
}

func (h *rateHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *rateHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := h.scope + "\x00" + r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			key += "\x00" + a.Value.String()
			return false
		}
		return true
	})
	dropped, ok := h.st.admit(key)
	if !ok {
		return nil
	}
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", dropped))
	}
	return h.next.Handle(ctx, r)
}

// admit says whether a line of key may be logged now, and how many were
// dropped since the last one.
func (s *rateState) admit(key string) (dropped int, ok bool) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.seen[key]
	if e == nil {
		if len(s.seen) >= maxKeys {
			s.forget(now)
		}
		s.seen[key] = &seen{last: now}
		return 0, true
	}
	if now.Sub(e.last) < s.opts.Every {
		e.dropped++
		return 0, false
	}
	dropped, e.dropped, e.last = e.dropped, 0, now
	return dropped, true
}

// forget drops the keys not logged for a while, or all of them if every
// key is recent (their next line is logged again at once).
func (s *rateState) forget(now time.Time) {
	for k, e := range s.seen {
		if now.Sub(e.last) >= s.opts.Every {
			delete(s.seen, k)
		}
	}
	if len(s.seen) >= maxKeys {
		clear(s.seen)
	}
}

func (h *rateHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.scope)
	for _, a := range attrs {
		b.WriteString("\x00" + a.String())
	}
	return &rateHandler{next: h.next.WithAttrs(attrs), st: h.st, scope: b.String()}
}

func (h *rateHandler) WithGroup(name string) slog.Handler {
	return &rateHandler{next: h.next.WithGroup(name), st: h.st, scope: h.scope + "\x00[" + name + "]"}
}
