package ds

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.ID, good.Dir, good.Secret = "ds1", "/tmp/x", make([]byte, 32)
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"no id", func(c *Config) { c.ID = "" }, false},
		{"id with space", func(c *Config) { c.ID = "ds 1" }, false},
		{"id with newline", func(c *Config) { c.ID = "ds\n1" }, false},
		{"id with escape", func(c *Config) { c.ID = "ds\x1b[2J" }, false},
		{"id with slash", func(c *Config) { c.ID = "ds/1" }, false},
		{"node with newline", func(c *Config) { c.Node = "n1\nn2" }, false},
		{"rack with space", func(c *Config) { c.Rack = "rack 1" }, false},
		{"node and rack", func(c *Config) { c.Node, c.Rack = "node-07.cluster", "r12" }, true},
		{"no dir", func(c *Config) { c.Dir = "" }, false},
		{"default listen", func(c *Config) { c.Listen = "" }, true},
		{"short secret", func(c *Config) { c.Secret = make([]byte, 16) }, false},
		{"block size not a power of two", func(c *Config) { c.BlockSize = 65535 }, false},
		{"block size too small", func(c *Config) { c.BlockSize = 2048 }, false},
		{"block size too large", func(c *Config) { c.BlockSize = 32 << 20 }, false},
		{"block size default", func(c *Config) { c.BlockSize = 0 }, true},
		{"block size 4 KiB", func(c *Config) { c.BlockSize = 4096 }, true},
		{"negative interval", func(c *Config) { c.HeartbeatInterval = -time.Second }, false},
		{"mds list", func(c *Config) { c.MDS = "a:1,b:2" }, true},
		{"mds list with a hole", func(c *Config) { c.MDS = "a:1,,b:2" }, false},
	} {
		c := good
		tc.mod(&c)
		err := c.Validate()
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", tc.name, err)
		}
	}
	if _, err := New(Config{ID: "x"}, Deps{}); !errors.Is(err, ErrConfig) {
		t.Errorf("New with a bad config = %v", err)
	}
}
