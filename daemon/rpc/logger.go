package rpc

import (
	"fmt"
	"log/slog"
	"strings"
)

// fasthttpLogger hands what fasthttp itself reports (connections refused
// over a limit, accept errors) to the server's logger, as warnings.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Warn("http transport", "detail", strings.TrimSpace(fmt.Sprintf(format, args...)))
}
