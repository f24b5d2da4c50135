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
}

// DefaultConfig returns the defaults: loopback port 7080.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("admin: listen address %q: %w", c.Listen, err)
	}
	return nil
}
