package admin

import (
	"fmt"
	"net"
)

// DefaultListen is the address the admin API listens on by default.
const DefaultListen = "127.0.0.1:7080"

// Config configures the admin API server.
type Config struct {
	Listen string // host:port to listen on; port 0 picks a free one
	// Token, when set, is the bearer token a change (PUT) must carry
	// ("Authorization: Bearer TOKEN"); empty: the API makes no changes.
	Token string
	// Who may change state (auth.go): the bearer token in TokenFile (mode
	// 0600), or a MUNGE credential (munged at MungeSocket) of root or of
	// a member of AdminGID (negative: none). Without either, every
	// mutation is refused.
	TokenFile   string
	MungeSocket string
	AdminGID    int64
	// TLSCert and TLSKey, if set, are PEM files: the API is served over
	// HTTPS only.
	TLSCert, TLSKey string
}

// DefaultConfig returns the defaults: loopback port 7080, no token.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, AdminGID: -1}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("admin: listen address %q: %w", c.Listen, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("admin: TLS needs both a certificate and a key file")
	}
	return nil
}
