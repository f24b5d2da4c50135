package ds

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/qos"
)

// Defaults and bounds of Config.
const (
	DefaultBlockSize         = 64 << 10
	DefaultHeartbeatInterval = time.Second
	DefaultListen            = "127.0.0.1:7201"
	DefaultScrubInterval     = 7 * 24 * time.Hour
	DefaultScrubRate         = 32 << 20
	MinBlockSize             = 4 << 10
	MaxBlockSize             = 16 << 20
)

// Config configures a data server. Zero values of optional fields take
// their defaults in New.
type Config struct {
	ID        string // unique id, e.g. "ds1"; required
	Listen    string // e.g. "127.0.0.1:7201" or "127.0.0.1:0"; default DefaultListen
	Advertise string // address reported to the MDS; default: the actual listen address
	Dir       string // component store directory; required, created if missing
	MDS       string // MDS RPC address(es), comma separated, for heartbeats; "" = no heartbeats
	Secret    []byte // cluster secret, len capability.SecretSize; required
	Node      string // failure domain reported to the MDS; default ID
	Rack      string // a wider failure domain: no two columns of a file in one rack; default none (the node is the domain)
	Capacity  uint64 // bytes; 0 = total size of the file system holding Dir
	// Share is how many data servers store on the file system holding Dir
	// (strata dev runs them all on one disk); 0 or 1: this one alone. A
	// server that shares reports 1/Share of the file system's available
	// bytes as its free space and its capacity as its own use plus that,
	// so that the cluster's df adds up to the disk's available space and
	// Strata's use, not Share times the disk.
	Share             int
	HeartbeatInterval time.Duration // default 1s; the MDS reply's IntervalMs overrides when non-zero
	BlockSize         int           // checksum block size; default 64 KiB; a power of two in [4 KiB, 16 MiB]
	ScrubInterval     time.Duration // a scrub pass starts this often (scrub.go); default 7 days; negative: only on demand
	ScrubRate         int64         // bytes per second a scrub pass reads at most; default 32 MiB/s; negative: unlimited

	// QoSBandwidth is the bytes a second the QoS scheduler lets through
	// (the disk's bandwidth); 0: unpaced, requests are ordered by the
	// policy only when QoSMaxInflight are in service (docs/qos.md).
	QoSBandwidth   int64
	QoSMaxInflight int // reads and writes served at once; default qos.DefaultMaxInflight
	QoSMaxQueued   int // reads and writes waiting; one more is answered EBUSY; default qos.DefaultMaxQueued
	// QoSOff serves reads and writes without the scheduler (no sharing,
	// no limits, no counters): the baseline of the QoS benchmark.
	QoSOff bool

	// RPC bounds the server: body limits, timeouts, connections per
	// peer, request-body memory (rpc.ServerConfig); zero fields take
	// rpc's defaults.
	RPC rpc.ServerConfig

	// TLS, if set, is TLS on the listener and on the heartbeats to the
	// MDS (docs/security.md); zero: plain.
	TLS rpc.TLSFiles
}

// DefaultConfig returns a Config with every optional field set to its
// default. ID, Dir and Secret must still be filled in.
func DefaultConfig() Config {
	return Config{
		Listen:            DefaultListen,
		HeartbeatInterval: DefaultHeartbeatInterval,
		BlockSize:         DefaultBlockSize,
		ScrubInterval:     DefaultScrubInterval,
		ScrubRate:         DefaultScrubRate,
		QoSMaxInflight:    qos.DefaultMaxInflight,
		QoSMaxQueued:      qos.DefaultMaxQueued,
	}
}

// withDefaults fills the optional fields left zero.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Node == "" {
		c.Node = c.ID
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.ScrubInterval == 0 {
		c.ScrubInterval = DefaultScrubInterval
	}
	if c.ScrubRate == 0 {
		c.ScrubRate = DefaultScrubRate
	}
	return c
}

// Validate reports the first problem of c. Optional fields may be zero.
func (c Config) Validate() error {
	if err := validID(c.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.TLS.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.TLS.On() && c.TLS.Cert == "" {
		return fmt.Errorf("%w: TLS needs the data server's certificate and key files", ErrConfig)
	}
	if c.Node != "" {
		if err := rpc.CheckName("node", c.Node); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	if c.Rack != "" {
		if err := rpc.CheckName("rack", c.Rack); err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	if c.Dir == "" {
		return fmt.Errorf("%w: dir is empty", ErrConfig)
	}
	if len(c.Secret) != capability.SecretSize {
		return fmt.Errorf("%w: secret is %d bytes, want %d", ErrConfig, len(c.Secret), capability.SecretSize)
	}
	if c.HeartbeatInterval < 0 {
		return fmt.Errorf("%w: heartbeat interval %v is negative", ErrConfig, c.HeartbeatInterval)
	}
	if c.QoSBandwidth < 0 || c.QoSMaxInflight < 0 || c.QoSMaxQueued < 0 {
		return fmt.Errorf("%w: qos bandwidth, max inflight and max queued must not be negative", ErrConfig)
	}
	if c.BlockSize != 0 && !validBlockSize(c.BlockSize) {
		return fmt.Errorf("%w: block size %d is not a power of two in [%d, %d]", ErrConfig, c.BlockSize, MinBlockSize, MaxBlockSize)
	}
	for _, a := range strings.Split(c.MDS, ",") {
		if c.MDS != "" && strings.TrimSpace(a) == "" {
			return fmt.Errorf("%w: empty address in mds list %q", ErrConfig, c.MDS)
		}
	}
	return nil
}

func validBlockSize(bs int) bool {
	return bs >= MinBlockSize && bs <= MaxBlockSize && bits.OnesCount(uint(bs)) == 1
}

// validID accepts the ids the MDS registers (rpc.CheckName), which the
// format file, logs and tables hold verbatim.
func validID(id string) error { return rpc.CheckName("id", id) }
