package agent

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/jobtier"
)

// Config configures a node agent. DefaultConfig gives every default;
// Node, Addr, GlobalMDS, Secret and Strata must be filled in.
type Config struct {
	Socket   string // the root-only socket the SPANK plugin calls
	Node     string // this node's Slurm name
	StateDir string // per-job state files, logs, the tier MDS's data
	HintsDir string // ROMIO hints files of the tiers (world-readable)
	NVMeDir  string // node-local storage; the tier DS of job J stores under NVMeDir/job-J

	GlobalMDS string // the global namespace's MDS address(es), comma separated
	Secret    []byte // the global namespace's cluster secret (capability.SecretSize)
	// GlobalTLS, if set, is the TLS of every call to the global namespace
	// (its MDS and data servers; docs/security.md). Tiers speak plain.
	GlobalTLS rpc.TLSFiles
	// MungeSocket is munged's socket, which the tier MDSes verify their
	// users' MUNGE credentials with; empty: munged's default.
	MungeSocket string

	// Addr is this node's address, where its tier daemons listen and
	// other nodes reach them.
	Addr string
	// NodeAddrs maps node names to addresses (the first node's is where
	// the tier MDS listens). A node not in it is looked up with
	// `scontrol show node`.
	NodeAddrs map[string]string

	// Strata is the strata binary the tier daemons run as.
	Strata string

	// Tier, as the cluster sets it: where tiers are mounted (DefaultMount,
	// with %j for the job id) and where mount= may put them.
	Tier jobtier.Options

	// PortBase and PortSlots place a tier's MDS: RPC port
	// PortBase + 2*slot, raft the next one, where slot is job % PortSlots
	// or one of the next few if that pair is taken on the first node
	// (ports.go).
	PortBase  int
	PortSlots int

	DefaultCapacity uint64 // per node, when the spec has none; 0: the NVMe file system's size
	DefaultUnit     int64  // stripe unit when the spec has none

	DrainRate     int64         // bytes per second this node drains at most; 0: no cap
	DrainWorkers  int           // files drained at once
	DrainSettle   time.Duration // a file is drained once its size and mtime have held this long
	ScanInterval  time.Duration // how often the tier is scanned for files to drain
	StageWorkers  int           // files (or pieces) staged in at once
	StageRate     int64         // bytes per second this node stages in at most; 0: no cap
	StageChunk    int64         // files larger than this are staged in pieces spread over the nodes
	ReadyTimeout  time.Duration // a prolog waits this long for the tier's MDS and data servers
	EpilogTimeout time.Duration // the final drain's budget; what is left is drained after the job
	// AfterJobTimeout bounds a drain that goes on after the job (what the
	// epilog could not drain): past it, what is left is recorded as lost.
	AfterJobTimeout time.Duration
	Retries         int // attempts per drain before a file is given up
}

// DefaultConfig returns a Config with every default set.
func DefaultConfig() Config {
	return Config{
		Socket:          "/run/strata/agent.sock",
		StateDir:        "/var/lib/strata/agent",
		HintsDir:        "/run/strata-hints",
		NVMeDir:         "/var/lib/strata/nvme",
		Tier:            jobtier.Options{DefaultMount: "/mnt/strata-tier/%j"},
		PortBase:        24000,
		PortSlots:       1000,
		DefaultUnit:     1 << 20,
		DrainWorkers:    4,
		DrainSettle:     time.Second,
		ScanInterval:    500 * time.Millisecond,
		StageWorkers:    4,
		StageChunk:      256 << 20,
		ReadyTimeout:    30 * time.Second,
		EpilogTimeout:   90 * time.Second,
		AfterJobTimeout: 2 * time.Hour,
		Retries:         3,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&c.Socket, d.Socket)
	set(&c.StateDir, d.StateDir)
	set(&c.HintsDir, d.HintsDir)
	set(&c.NVMeDir, d.NVMeDir)
	set(&c.Tier.DefaultMount, d.Tier.DefaultMount)
	for _, p := range []struct {
		v   *int
		def int
	}{{&c.PortBase, d.PortBase}, {&c.PortSlots, d.PortSlots}, {&c.DrainWorkers, d.DrainWorkers}, {&c.StageWorkers, d.StageWorkers}, {&c.Retries, d.Retries}} {
		if *p.v == 0 {
			*p.v = p.def
		}
	}
	for _, p := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.DrainSettle, d.DrainSettle}, {&c.ScanInterval, d.ScanInterval}, {&c.ReadyTimeout, d.ReadyTimeout}, {&c.EpilogTimeout, d.EpilogTimeout}, {&c.AfterJobTimeout, d.AfterJobTimeout}} {
		if *p.v == 0 {
			*p.v = p.def
		}
	}
	if c.DefaultUnit == 0 {
		c.DefaultUnit = d.DefaultUnit
	}
	if c.StageChunk == 0 {
		c.StageChunk = d.StageChunk
	}
	return c
}

// Validate reports the first problem of c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Node == "":
		return bad("node (this node's Slurm name) is required")
	case c.Addr == "" || net.ParseIP(c.Addr) == nil:
		return bad("addr %q: want this node's IP address, where its tier daemons listen", c.Addr)
	case c.GlobalMDS == "":
		return bad("global MDS address is required")
	case len(c.Secret) != capability.SecretSize:
		return bad("secret must be %d bytes, got %d", capability.SecretSize, len(c.Secret))
	case c.GlobalTLS.Validate() != nil:
		return bad("%v", c.GlobalTLS.Validate())
	case c.Strata == "" || !filepath.IsAbs(c.Strata):
		return bad("strata binary %q: want an absolute path", c.Strata)
	case !filepath.IsAbs(c.Socket) || !filepath.IsAbs(c.StateDir) || !filepath.IsAbs(c.NVMeDir) || !filepath.IsAbs(c.HintsDir):
		return bad("socket, state, hints and NVMe directories must be absolute paths")
	case c.PortBase < 1024 || c.PortSlots < 1 || c.PortBase+2*c.PortSlots > 65535:
		return bad("ports %d + 2 x %d slots do not fit in 1024-65535", c.PortBase, c.PortSlots)
	case c.DrainRate < 0, c.StageRate < 0, c.DrainWorkers < 1, c.StageWorkers < 1, c.Retries < 1, c.StageChunk < 1<<20:
		return bad("drain and stage rates, workers, retries and stage chunk (at least 1 MiB) must be positive")
	}
	for n, a := range c.NodeAddrs {
		if n == "" || net.ParseIP(a) == nil {
			return bad("node address %q=%q: want NAME=IP", n, a)
		}
	}
	if err := c.Tier.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// ParseNodeAddrs parses "n1=10.0.0.1,n2=10.0.0.2".
func ParseNodeAddrs(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n, a, ok := strings.Cut(item, "=")
		if !ok || n == "" || net.ParseIP(a) == nil {
			return nil, fmt.Errorf("node address %q: want NAME=IP", item)
		}
		m[n] = a
	}
	return m, nil
}
