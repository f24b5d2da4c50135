package rpc

import (
	"fmt"
	"time"
)

// Body limits of the two method classes. A metadata call (Handle) carries
// names, symbolic link targets and extended attribute values of at most
// 64 KiB; a data call (HandleData) one chunk of at most MaxData bytes and
// its header.
const (
	// DefaultMaxMetaBody is the largest body of a metadata call.
	DefaultMaxMetaBody = 1 << 20
	// MaxFraming is the room a data call's body has for its frame header
	// (version, length, the request with its capability) beyond MaxData.
	MaxFraming = 64 << 10
	// DefaultMaxDataBody is the largest body of a data call.
	DefaultMaxDataBody = MaxData + MaxFraming
)

// ServerConfig bounds what a Server gives its clients: the largest body
// of each method class, refused from the Content-Length before anything is
// allocated for it; how long a peer may take; how many connections one
// peer address may hold; and how much memory the bodies of data calls may
// hold at once (a flood of large calls waits for it, then is refused).
type ServerConfig struct {
	MaxMetaBody int // bytes; default DefaultMaxMetaBody
	MaxDataBody int // bytes; default DefaultMaxDataBody

	// ReadTimeout bounds the wait for a request's first byte on a new
	// connection, its headers, and a metadata call's body; default 10s.
	ReadTimeout time.Duration
	// DataReadTimeout bounds the reading of a data call's body once its
	// headers are in; default 2m.
	DataReadTimeout time.Duration
	// WriteTimeout bounds the writing of a reply; default 2m.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long; default
	// 2m, longer than the Client's 90s so that the client closes first.
	IdleTimeout time.Duration

	// MaxConnsPerPeer caps the connections of one peer IP address; more
	// are refused. Default 1024 (a node's mount, agent and tools share it).
	MaxConnsPerPeer int
	// MaxConns caps the connections served at once; default 16384.
	MaxConns int

	// BodyMemory caps the bytes of streamed request bodies held at once
	// over every connection; default 256 MiB.
	BodyMemory int64
	// BodyWait is how long a call waits for BodyMemory (or
	// BufferedBodyMemory) before it is refused with EAGAIN; default 10s.
	BodyWait time.Duration
	// BufferedBodyMemory caps the bytes of the request bodies read whole
	// (every call of a server that does not stream bodies, as the MDS)
	// held at once; bodies of at most 4 KiB are not counted. Default 64 MiB.
	BufferedBodyMemory int64
}

// DefaultServerConfig returns the defaults of every field.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		MaxMetaBody:     DefaultMaxMetaBody,
		MaxDataBody:     DefaultMaxDataBody,
		ReadTimeout:     10 * time.Second,
		DataReadTimeout: 2 * time.Minute,
		WriteTimeout:    2 * time.Minute,
		IdleTimeout:     2 * time.Minute,
		MaxConnsPerPeer: 1024,
		MaxConns:        16384,
		BodyMemory:      256 << 20,
		BodyWait:        10 * time.Second,

		BufferedBodyMemory: 64 << 20,
	}
}

// withDefaults fills in the zero fields.
func (c ServerConfig) withDefaults() ServerConfig {
	d := DefaultServerConfig()
	if c.MaxMetaBody == 0 {
		c.MaxMetaBody = d.MaxMetaBody
	}
	if c.MaxDataBody == 0 {
		c.MaxDataBody = d.MaxDataBody
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = d.ReadTimeout
	}
	if c.DataReadTimeout == 0 {
		c.DataReadTimeout = d.DataReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxConnsPerPeer == 0 {
		c.MaxConnsPerPeer = d.MaxConnsPerPeer
	}
	if c.MaxConns == 0 {
		c.MaxConns = d.MaxConns
	}
	if c.BodyMemory == 0 {
		c.BodyMemory = d.BodyMemory
	}
	if c.BodyWait == 0 {
		c.BodyWait = d.BodyWait
	}
	if c.BufferedBodyMemory == 0 {
		c.BufferedBodyMemory = d.BufferedBodyMemory
	}
	return c
}

// Validate checks the config after defaults are applied.
func (c ServerConfig) Validate() error {
	switch {
	case c.MaxMetaBody < 4<<10 || c.MaxMetaBody > MaxBody:
		return fmt.Errorf("%w: max meta body %d: must be 4 KiB to %d", ErrConfig, c.MaxMetaBody, MaxBody)
	case c.MaxDataBody < MaxFraming || c.MaxDataBody > MaxBody:
		return fmt.Errorf("%w: max data body %d: must be %d to %d", ErrConfig, c.MaxDataBody, MaxFraming, MaxBody)
	case c.ReadTimeout < 0 || c.DataReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.BodyWait < 0:
		return fmt.Errorf("%w: negative timeout", ErrConfig)
	case c.MaxConnsPerPeer < 1 || c.MaxConns < c.MaxConnsPerPeer:
		return fmt.Errorf("%w: max conns per peer %d, max conns %d: need 1 <= per peer <= total", ErrConfig, c.MaxConnsPerPeer, c.MaxConns)
	case c.BodyMemory < int64(c.MaxDataBody):
		return fmt.Errorf("%w: body memory %d is less than one data body (%d)", ErrConfig, c.BodyMemory, c.MaxDataBody)
	case c.BufferedBodyMemory < int64(c.MaxMetaBody):
		return fmt.Errorf("%w: buffered body memory %d is less than one metadata body (%d)", ErrConfig, c.BufferedBodyMemory, c.MaxMetaBody)
	}
	return nil
}
