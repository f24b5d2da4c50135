package logging

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Printf adapts log to libraries that log with Printf, such as fasthttp's
// Server.Logger: each line becomes a record at level with the message msg
// and the library's text as "line", so that it is structured, filtered by
// level and, at warn and above, rate-limited like any other.
func Printf(log *slog.Logger, level slog.Level, msg string) *PrintfLogger {
	return &PrintfLogger{log: log, level: level, msg: msg}
}

// PrintfLogger is a *slog.Logger with a Printf method (see Printf).
type PrintfLogger struct {
	log   *slog.Logger
	level slog.Level
	msg   string
}

// Printf logs one line.
func (p *PrintfLogger) Printf(format string, args ...any) {
	if p == nil || p.log == nil || !p.log.Enabled(context.Background(), p.level) {
		return
	}
	p.log.Log(context.Background(), p.level, p.msg, "line", strings.TrimSpace(fmt.Sprintf(format, args...)))
}
