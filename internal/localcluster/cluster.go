package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/admin"
	"github.com/strata-hpc/strata/daemon/ds"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/capability"
)

// Options configures a local cluster. Addresses may use port 0: they are
// resolved to free ports at Start and kept across restarts.
type Options struct {
	Dir               string   // all data lives below it; required
	DS                int      // number of data servers; default 4
	MDS               int      // number of MDS replicas (raft voters); default 1
	MDSAddr           string   // the first replica's; default 127.0.0.1:0 (others always 127.0.0.1:0)
	RaftAddr          string   // the first replica's; default 127.0.0.1:0
	AdminAddr         string   // default 127.0.0.1:0; "-" disables the admin API
	AdminToken        string   // the admin API's bearer token for changes; empty: none allowed
	DSAddrs           []string // per data server; missing entries default to 127.0.0.1:0
	Log               *slog.Logger
	RaftTimeout       time.Duration      // default: the MDS default
	HeartbeatInterval time.Duration      // default: the daemons' default
	HeartbeatTimeout  time.Duration      // default: the MDS default
	DefaultLayout     string             // default: the MDS default
	DSCapacity        uint64             // per data server; 0 = an equal share of the file system holding Dir (they share one disk: each reports that share of its free space, ds.Config.Share)
	MDSConfig         func(*mds.Config)  // if set, changes each replica's config last (tests: rebuild and capability timing)
	DSConfig          func(*ds.Config)   // if set, changes each data server's config last (tests: scrub)
	Recall            mds.LayoutRecaller // if set, every replica tells it before and after moving a component (the NFS front end's nfs.Relay)
}

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	o      Options
	secret []byte
	share  int // ds.Config.Share: the data servers share one disk (DSCapacity was 0)

	mdsAddrs  []string // RPC address of each replica
	raftAddrs []string // raft address of each replica

	mu    sync.Mutex
	mds   []*mds.Server // nil where stopped
	ds    []*ds.Server  // nil where stopped
	admin *admin.Server
}

// Start starts the MDS, the data servers and the admin API, and returns
// once every data server has registered with the MDS.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("localcluster: no directory")
	}
	if o.DS == 0 {
		o.DS = 4
	}
	if o.MDS == 0 {
		o.MDS = 1
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	var err error
	mdsAddrs, raftAddrs := make([]string, o.MDS), make([]string, o.MDS)
	for i := range mdsAddrs {
		m, r := "", ""
		if i == 0 {
			m, r = o.MDSAddr, o.RaftAddr
		}
		if mdsAddrs[i], err = resolve(m); err != nil {
			return nil, err
		}
		if raftAddrs[i], err = resolve(r); err != nil {
			return nil, err
		}
	}
	if o.AdminAddr != "-" {
		if o.AdminAddr, err = resolve(o.AdminAddr); err != nil {
			return nil, err
		}
	}
	addrs := make([]string, o.DS)
	for i := range addrs {
		if i < len(o.DSAddrs) {
			addrs[i] = o.DSAddrs[i]
		}
		if addrs[i], err = resolve(addrs[i]); err != nil {
			return nil, err
		}
	}
	o.DSAddrs = addrs
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	secret, err := capability.LoadOrCreateSecretFile(filepath.Join(o.Dir, "secret"))
	if err != nil {
		return nil, err
	}
	share := 0
	if o.DSCapacity == 0 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(o.Dir, &st); err == nil && o.DS > 0 {
			o.DSCapacity = st.Blocks * uint64(st.Bsize) / uint64(o.DS)
			share = o.DS
		}
	}
	c := &Cluster{o: o, share: share, secret: secret, mdsAddrs: mdsAddrs, raftAddrs: raftAddrs, mds: make([]*mds.Server, o.MDS), ds: make([]*ds.Server, o.DS)}
	if err := c.start(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.StartMDS(ctx); err != nil {
		return err
	}
	for i := range c.ds {
		if err := c.StartDS(ctx, i); err != nil {
			return err
		}
	}
	if c.o.AdminAddr != "-" {
		acfg := admin.DefaultConfig()
		acfg.Listen = c.o.AdminAddr
		acfg.Token = c.o.AdminToken
		a, err := admin.New(acfg, admin.Deps{Log: c.o.Log, Source: c.mdsSource(), Tiers: c.mdsSource(), QoS: c.mdsSource()})
		if err != nil {
			return fmt.Errorf("admin: %w", err)
		}
		if err := a.Start(ctx); err != nil {
			return fmt.Errorf("admin: %w", err)
		}
		c.mu.Lock()
		c.admin = a
		c.mu.Unlock()
	}
	return c.WaitDS(ctx, len(c.ds))
}

// resolve turns a port-0 (or empty) loopback address into a free port.
func resolve(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("localcluster: address %q: %w", addr, err)
	}
	if port != "0" {
		return addr, nil
	}
	return FreeAddr(host)
}

// Ports FreeAddr hands out: below the kernel's ephemeral range (32768 on,
// by default), where outgoing connections take their local ports, so a
// stopped daemon's port is not taken by a client connection before it
// restarts; and clear of the job tiers' MDS ports (agent PortBase 24000,
// 2000 of them) and the dev Slurm cluster's (contrib/devcluster, 16817 to
// about 19100).
const (
	freePortLo = 27000
	freePortHi = 32700
)

// FreeAddr returns host:port with a port nothing listens on now, for a
// daemon to listen on later (and again after a restart). The port stays
// reserved to this process until it exits: an exclusive flock on a file
// named after it (in portLockDir) keeps the test processes that run in
// parallel from handing out the same port while its daemon is not
// listening (before it starts, or stopped to be restarted).
func FreeAddr(host string) (string, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.held == nil {
		ports.held = map[int]*os.File{}
		if err := os.MkdirAll(portLockDir, 0o700); err != nil {
			return "", fmt.Errorf("localcluster: %w", err)
		}
	}
	start := rand.IntN(freePortHi - freePortLo)
	for i := range freePortHi - freePortLo {
		p := freePortLo + (start+i)%(freePortHi-freePortLo)
		if ports.held[p] != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(portLockDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return "", fmt.Errorf("localcluster: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			_ = f.Close() // another process holds it
			continue
		}
		addr := net.JoinHostPort(host, strconv.Itoa(p))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			_ = f.Close()
			continue
		}
		_ = ln.Close()
		ports.held[p] = f
		return addr, nil
	}
	return "", fmt.Errorf("localcluster: no free port on %s in [%d, %d)", host, freePortLo, freePortHi)
}

// portLockDir holds the lock files of FreeAddr's reservations.
var portLockDir = filepath.Join(os.TempDir(), "strata-test-ports")

// ports is this process's reservations.
var ports struct {
	mu   sync.Mutex
	held map[int]*os.File
}
