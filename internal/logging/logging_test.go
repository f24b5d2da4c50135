package logging

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestLogger(level slog.Level) (*slog.Logger, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1e9, 0)}
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(RateLimit(h, RateOptions{Every: 10 * time.Second, Now: c.now})), &buf, c
}

func lines(b *bytes.Buffer) []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestRepeatedErrorIsRateLimited(t *testing.T) {
	log, buf, c := newTestLogger(slog.LevelDebug)
	ds := log.With("component", "ds")
	for i := 0; i < 1000; i++ {
		ds.Error("read_failed", "inode", i, "err", errors.New("checksum mismatch"))
	}
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], "inode=0") {
		t.Fatalf("1000 repeats within the interval logged %d lines, want the first only:\n%s", len(got), buf)
	}
	// Another error, another logger or an info line is not the repeat.
	ds.Error("read_failed", "err", errors.New("disk gone"))
	log.With("component", "mds").Error("read_failed", "err", errors.New("checksum mismatch"))
	for i := 0; i < 3; i++ {
		ds.Info("read", "inode", i)
		ds.Debug("read_detail", "inode", i)
	}
	if got := lines(buf); len(got) != 9 {
		t.Fatalf("want 9 lines (1 + 2 other errors + 3 info + 3 debug), got %d:\n%s", len(got), buf)
	}
	buf.Reset()
	c.add(10 * time.Second)
	ds.Error("read_failed", "inode", 1000, "err", errors.New("checksum mismatch"))
	got := lines(buf)
	if len(got) != 1 || !strings.Contains(got[0], "repeated=999") || !strings.Contains(got[0], "inode=1000") {
		t.Fatalf("after the interval: want one line with repeated=999, got:\n%s", buf)
	}
	buf.Reset()
	c.add(time.Minute)
	ds.Warn("read_failed", "err", errors.New("checksum mismatch"))
	if got := lines(buf); len(got) != 1 || strings.Contains(got[0], "repeated") {
		t.Fatalf("after a quiet spell: want one line without repeated=, got:\n%s", buf)
	}
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  []string
	}{
		{"debug", []string{"DEBUG", "INFO", "WARN", "ERROR"}},
		{"INFO", []string{"INFO", "WARN", "ERROR"}},
		{"warning", []string{"WARN", "ERROR"}},
		{"error", []string{"ERROR"}},
	} {
		var buf bytes.Buffer
		log, err := New(&buf, tc.level)
		if err != nil {
			t.Fatalf("%s: %v", tc.level, err)
		}
		log.Debug("d")
		log.Info("i")
		log.Warn("w")
		log.Error("e")
		got := lines(&buf)
		if len(got) != len(tc.want) {
			t.Fatalf("level %s: %d lines, want %d:\n%s", tc.level, len(got), len(tc.want), buf.String())
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], "level="+w) {
				t.Errorf("level %s: line %q, want level=%s", tc.level, got[i], w)
			}
		}
	}
	for _, bad := range []string{"", "verbose", "3"} {
		if _, err := New(&bytes.Buffer{}, bad); !errors.Is(err, ErrLevel) {
			t.Errorf("level %q: err %v, want ErrLevel", bad, err)
		}
	}
}

func TestPrintfLines(t *testing.T) {
	log, buf, _ := newTestLogger(slog.LevelInfo)
	p := Printf(log.With("component", "rpc"), slog.LevelWarn, "fasthttp")
	for i := 0; i < 500; i++ {
		p.Printf("WARNING: Request.Body() reads the entire stream into memory.")
	}
	got := lines(buf)
	if len(got) != 1 {
		t.Fatalf("500 repeated library lines: %d logged, want 1:\n%s", len(got), buf)
	}
	want := `level=WARN msg=fasthttp component=rpc line="WARNING: Request.Body() reads the entire stream into memory."`
	if got[0] != want {
		t.Errorf("got  %s\nwant %s", got[0], want)
	}
	buf.Reset()
	Printf(log, slog.LevelDebug, "lib").Printf("detail %d", 1)
	if buf.Len() != 0 {
		t.Errorf("a debug library line at level info was logged: %s", buf)
	}
}
