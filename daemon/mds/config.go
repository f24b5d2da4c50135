package mds

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/layout"
)

// Config configures a metadata server. The zero value of a field means its
// default (DefaultConfig), except Dir and Secret which are required.
type Config struct {
	ID                string        // raft server id; default "mds1"
	Listen            string        // RPC address, e.g. "127.0.0.1:7000" or "127.0.0.1:0"
	RaftAddr          string        // raft TCP bind/advertise, e.g. "127.0.0.1:7100" or "127.0.0.1:0"
	Dir               string        // raft log (raft-wal), stable store, snapshots; required
	Secret            []byte        // cluster secret (capability.SecretSize); required
	DefaultLayout     string        // cluster default, "width=4,unit=1M,scheme=none"
	CapabilityTTL     time.Duration // default 10m
	HeartbeatInterval time.Duration // told to DSes; default 1s
	HeartbeatTimeout  time.Duration // a DS not heard from for this long is down; default 5s
	RaftTimeout       time.Duration // raft heartbeat/election/lease timeouts; default 500ms; tests use ~50ms
	SnapshotThreshold uint64        // raft snapshot threshold; default 8192
	Peers             []string      // the initial voters' raft addresses, "addr" or "id=addr" (id defaults to addr); empty: this node alone
	Join              bool          // do not bootstrap: wait to be added as a voter (strata admin mds add)
	Advertise         string        // RPC address followers redirect clients to; default the listen address

	// InlineMax is the size up to which a new file keeps its bytes in the
	// MDS, in raft (inline.go, docs/architecture.md); DefaultConfig sets
	// DefaultInlineMax. 0 (and a Config made without DefaultConfig):
	// files are never inline. At most rpc.MaxInline.
	InlineMax int
	// InlineBudget bounds the bytes all inline files hold together: they
	// live in the MDS's memory and in every snapshot. Past it new files
	// are made on the data servers and an inline file that grows moves
	// there. DefaultConfig sets DefaultInlineBudget; 0: no bound.
	InlineBudget int64

	// Failure handling (rebuild.go). A component is rebuilt when it is
	// stale, when its data server has been down for RebuildDelay, or when
	// its data server is draining.
	RebuildDelay     time.Duration // how long a data server may be down before its components are rebuilt elsewhere; default 30s
	RebuildRate      int64         // bytes per second all rebuilds together may write; default 128 MiB/s; negative: unlimited
	RebuildParallel  int           // components rebuilt at once; default 4
	RebuildYieldLoad float64       // pause while a data server involved reports more foreground calls in flight than this; default 4
	RebalanceSpread  float64       // move components when two data servers' fills (used/capacity) differ by more than this fraction (rebalance.go); default 0.10; negative: never

	// RPC bounds the RPC server: body limits, timeouts, connections per
	// peer (rpc.ServerConfig); zero fields take rpc's defaults.
	RPC rpc.ServerConfig

	// Who is asking (auth.go, docs/security.md).
	MungeSocket  string          // munged's socket, to verify the MUNGE credentials that open sessions; default identity.DefaultMungeSocket
	SessionTTL   time.Duration   // lifetime of a session token; default 1h
	TrustedNodes []netip.Prefix  // networks node credentials are accepted from; empty: any holder of the cluster secret
	Squash       []identity.Rule // nodemap: how the callers of untrusted networks are squashed
	AdminGroup   string          // members of this group (name or gid) are admins, besides root on a trusted node; empty: none
	Owner        string          // uid: serve only this user and node daemons (a job tier's MDS); empty: everyone
	NoAuth       bool            // take every caller's word (benchmarks of the cost of authentication only; no flag sets it)

	// TLS, if set, is TLS on the RPC listener, on the MDS's calls to data
	// servers and on raft (tls.go, docs/security.md); zero: plain.
	TLS rpc.TLSFiles
}

// builtinPolicy fills whatever DefaultLayout leaves unset.
func builtinPolicy() layout.Policy {
	return layout.Policy{Width: 4, Unit: 1 << 20, Scheme: layout.Scheme{Kind: layout.KindNone}, HasScheme: true}
}

// DefaultConfig returns a Config with every default set; Dir and Secret
// are still to be filled in.
func DefaultConfig() Config {
	return Config{
		ID:                "mds1",
		Listen:            "127.0.0.1:7000",
		RaftAddr:          "127.0.0.1:7100",
		DefaultLayout:     builtinPolicy().String(),
		CapabilityTTL:     10 * time.Minute,
		HeartbeatInterval: time.Second,
		HeartbeatTimeout:  5 * time.Second,
		RaftTimeout:       500 * time.Millisecond,
		SnapshotThreshold: 8192,
		RebuildDelay:      30 * time.Second,
		RebuildRate:       128 << 20,
		RebuildParallel:   4,
		RebuildYieldLoad:  4,
		RebalanceSpread:   0.10,
		SessionTTL:        time.Hour,
		InlineMax:         DefaultInlineMax,
		InlineBudget:      DefaultInlineBudget,
	}
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ID == "" {
		c.ID = d.ID
		if len(c.Peers) > 0 {
			c.ID = c.RaftAddr
			if c.ID == "" {
				c.ID = d.RaftAddr
			}
		}
	}
	if c.Listen == "" {
		c.Listen = d.Listen
	}
	if c.RaftAddr == "" {
		c.RaftAddr = d.RaftAddr
	}
	if c.DefaultLayout == "" {
		c.DefaultLayout = d.DefaultLayout
	}
	if c.CapabilityTTL == 0 {
		c.CapabilityTTL = d.CapabilityTTL
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = d.HeartbeatTimeout
	}
	if c.RaftTimeout == 0 {
		c.RaftTimeout = d.RaftTimeout
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = d.SnapshotThreshold
	}
	if c.RebuildDelay == 0 {
		c.RebuildDelay = d.RebuildDelay
	}
	if c.RebuildRate == 0 {
		c.RebuildRate = d.RebuildRate
	}
	if c.RebuildParallel == 0 {
		c.RebuildParallel = d.RebuildParallel
	}
	if c.RebalanceSpread == 0 {
		c.RebalanceSpread = d.RebalanceSpread
	}
	if c.RebuildYieldLoad == 0 {
		c.RebuildYieldLoad = d.RebuildYieldLoad
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = d.SessionTTL
	}
	return c
}

// Validate checks the config after defaults are applied: the required
// fields are set, the default layout parses, and
// the durations are usable.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Dir == "" {
		return fmt.Errorf("%w: dir is required", ErrConfig)
	}
	if len(c.Secret) != capability.SecretSize {
		return fmt.Errorf("%w: secret must be %d bytes, got %d", ErrConfig, capability.SecretSize, len(c.Secret))
	}
	if _, err := lookupGroup(c.AdminGroup); err != nil {
		return fmt.Errorf("%w: admin group: %w", ErrConfig, err)
	}
	if err := c.TLS.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.TLS.On() && c.TLS.Cert == "" {
		return fmt.Errorf("%w: TLS needs the MDS's certificate and key files", ErrConfig)
	}
	if _, err := parseOwner(c.Owner); err != nil {
		return fmt.Errorf("%w: owner: %w", ErrConfig, err)
	}
	if len(c.Peers) > 0 {
		peers, err := parsePeers(c.Peers)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if !slices.ContainsFunc(peers, func(p peer) bool { return p.id == c.ID }) {
			return fmt.Errorf("%w: this node (id %q) is not among the raft peers %v; give --id or list its raft address", ErrConfig, c.ID, c.Peers)
		}
	}
	if _, err := defaultPolicy(c.DefaultLayout); err != nil {
		return fmt.Errorf("%w: default layout: %w", ErrConfig, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"capability ttl", c.CapabilityTTL},
		{"heartbeat interval", c.HeartbeatInterval},
		{"heartbeat timeout", c.HeartbeatTimeout},
		{"rebuild delay", c.RebuildDelay},
	} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrConfig, d.name, d.v)
		}
	}
	if c.HeartbeatTimeout < c.HeartbeatInterval {
		return fmt.Errorf("%w: heartbeat timeout %v is shorter than the interval %v", ErrConfig, c.HeartbeatTimeout, c.HeartbeatInterval)
	}
	if c.InlineBudget < 0 {
		return fmt.Errorf("%w: inline budget %d is negative", ErrConfig, c.InlineBudget)
	}
	if c.InlineMax < 0 || c.InlineMax > rpc.MaxInline {
		return fmt.Errorf("%w: inline threshold %d is not in [0, %d]", ErrConfig, c.InlineMax, rpc.MaxInline)
	}
	if c.RebuildParallel < 1 || c.RebuildParallel > 64 {
		return fmt.Errorf("%w: rebuild parallelism %d is not in [1, 64]", ErrConfig, c.RebuildParallel)
	}
	if c.RebuildYieldLoad < 0 {
		return fmt.Errorf("%w: rebuild yield load %v is negative", ErrConfig, c.RebuildYieldLoad)
	}
	if c.RebalanceSpread > 1 {
		return fmt.Errorf("%w: rebalance spread %v is above 1 (it is a fraction of a data server's capacity)", ErrConfig, c.RebalanceSpread)
	}
	if c.RaftTimeout < 5*time.Millisecond {
		return fmt.Errorf("%w: raft timeout %v is below 5ms", ErrConfig, c.RaftTimeout)
	}
	return nil
}

// defaultPolicy parses the cluster default layout and completes it from the
// built-in default, so that it sets width, unit and scheme.
func defaultPolicy(s string) (layout.Policy, error) {
	p, err := layout.Parse(s)
	if err != nil {
		return layout.Policy{}, err
	}
	return layout.Resolve(p, builtinPolicy())
}

// peer is one initial voter.
type peer struct {
	id   string
	addr string
}

// parsePeers parses Config.Peers: "addr" or "id=addr" each.
func parsePeers(list []string) ([]peer, error) {
	var out []peer
	seen := map[string]bool{}
	for _, p := range list {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		id, addr, ok := strings.Cut(p, "=")
		if !ok {
			id, addr = p, p
		}
		if id == "" || addr == "" || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("raft peer %q: want host:port or id=host:port", p)
		}
		if seen[id] {
			return nil, fmt.Errorf("raft peer %q: id %q given twice", p, id)
		}
		seen[id] = true
		out = append(out, peer{id: id, addr: addr})
	}
	return out, nil
}
