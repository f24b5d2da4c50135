package ds

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/net"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// What a data server measures for the MDS's bandwidth ledger (docs/qos.md):
// every heartbeat, the bytes its disk read and wrote and its network
// interfaces moved since the last one (the machine's counters, through
// gopsutil), what its QoS scheduler let through and how long requests
// waited in it. Its capacity is qos_bandwidth when set; else the most it
// has delivered in one interval so far, disk or served, which grows as
// the server is loaded: a lower bound a site states exactly with
// qos_bandwidth.

// Meter reads the machine's cumulative disk and network counters.
type Meter interface {
	// Disk returns the block device holding dir and the bytes it has
	// read and written. A dir on no block device (tmpfs, overlay)
	// returns device "" and no error.
	Disk(ctx context.Context, dir string) (device string, read, written uint64, err error)
	// Net returns the bytes received and sent by every interface but
	// loopback.
	Net(ctx context.Context) (rx, tx uint64, err error)
}

// SystemMeter is the Meter of the machine (gopsutil v4). The zero value
// looks dir's device up on every call; NewSystemMeter's keeps it a while.
type SystemMeter struct {
	devs *deviceCache
}

var _ Meter = SystemMeter{}

// NewSystemMeter returns a SystemMeter that looks a directory's device up
// once a minute, not at every heartbeat: the lookup reads the whole mount
// table (a few milliseconds of CPU a beat, several percent of a loaded
// data server's).
func NewSystemMeter() SystemMeter { return SystemMeter{devs: &deviceCache{}} }

// deviceCache is the device of the last directory looked up, and when.
type deviceCache struct {
	mu  sync.Mutex
	dir string
	dev string
	at  time.Time
}

// deviceTTL is how long a directory's device is kept.
const deviceTTL = time.Minute

// device returns deviceOf(dir), from the cache while it is fresh.
func (sm SystemMeter) device(ctx context.Context, dir string) (string, error) {
	if sm.devs == nil {
		return deviceOf(ctx, dir)
	}
	c := sm.devs
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == dir && !c.at.IsZero() && time.Since(c.at) < deviceTTL {
		return c.dev, nil
	}
	dev, err := deviceOf(ctx, dir)
	if err != nil {
		return "", err
	}
	c.dir, c.dev, c.at = dir, dev, time.Now()
	return dev, nil
}

// Disk finds dir's file system among the mounted ones (the longest mount
// point above it) and reads its device's counters.
func (sm SystemMeter) Disk(ctx context.Context, dir string) (string, uint64, uint64, error) {
	dev, err := sm.device(ctx, dir)
	if err != nil || dev == "" {
		return "", 0, 0, err
	}
	m, err := disk.IOCountersWithContext(ctx, dev)
	if err != nil {
		return "", 0, 0, fmt.Errorf("disk counters of %s: %w", dev, err)
	}
	c, ok := m[dev]
	if !ok {
		return "", 0, 0, nil
	}
	return dev, c.ReadBytes, c.WriteBytes, nil
}

// deviceOf returns the name of the block device (as /proc/diskstats
// names it) of the file system holding dir, "" if it is not on one.
func deviceOf(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", dir, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	parts, err := disk.PartitionsWithContext(ctx, false)
	if err != nil {
		return "", fmt.Errorf("mounted file systems: %w", err)
	}
	best, bestLen := "", -1
	for _, p := range parts {
		mp := p.Mountpoint
		under := abs == mp || mp == "/" || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")
		if under && len(mp) > bestLen {
			best, bestLen = p.Device, len(mp)
		}
	}
	if !strings.HasPrefix(best, "/dev/") {
		return "", nil
	}
	if r, err := filepath.EvalSymlinks(best); err == nil { // /dev/mapper/x -> /dev/dm-0
		best = r
	}
	return filepath.Base(best), nil
}

// Net sums the counters of every interface but loopback.
func (SystemMeter) Net(ctx context.Context) (uint64, uint64, error) {
	nics, err := net.IOCountersWithContext(ctx, true)
	if err != nil {
		return 0, 0, fmt.Errorf("network counters: %w", err)
	}
	var rx, tx uint64
	for _, n := range nics {
		if n.Name == "lo" {
			continue
		}
		rx += n.BytesRecv
		tx += n.BytesSent
	}
	return rx, tx, nil
}

// telemetry turns cumulative counters into the rates of one heartbeat
// interval. It is owned by the heartbeat goroutine.
type telemetry struct {
	s    *Server
	last sample
	peak uint64 // the most bytes per second delivered in one interval
	warn bool   // a meter failure was logged
}

// sample is the cumulative counters at one time.
type sample struct {
	at                  time.Time
	read, written       uint64
	rx, tx              uint64
	served              int64
	granted, waitNanos  int64
	device              string
	diskOK, netOK, seen bool
}

func (t *telemetry) read(ctx context.Context) sample {
	s := t.s
	now := sample{at: s.clock(), seen: true}
	var derr, nerr error
	now.device, now.read, now.written, derr = s.meter.Disk(ctx, s.cfg.Dir)
	now.diskOK = derr == nil && now.device != ""
	now.rx, now.tx, nerr = s.meter.Net(ctx)
	now.netOK = nerr == nil
	if (derr != nil || nerr != nil) && !t.warn {
		s.log.Warn("telemetry_unavailable", "disk_err", derr, "net_err", nerr)
		t.warn = true
	}
	st := s.qos.Stats()
	for _, c := range st.Classes {
		now.served += c.Served
	}
	now.granted, now.waitNanos = st.Granted, st.WaitNanos
	return now
}

// measure returns what the server delivered since the last call (nil on
// the first call: there is no interval yet).
func (t *telemetry) measure(ctx context.Context) *rpc.DSMeasure {
	now := t.read(ctx)
	prev := t.last
	t.last = now
	if !prev.seen {
		return nil
	}
	dt := now.at.Sub(prev.at).Seconds()
	if dt <= 0 {
		return nil
	}
	rate := func(a, b uint64) uint64 {
		if b < a {
			return 0 // a counter went back (device or interface reset)
		}
		return uint64(float64(b-a) / dt)
	}
	m := &rpc.DSMeasure{Device: now.device}
	if now.diskOK && prev.diskOK && now.device == prev.device {
		m.DiskRead, m.DiskWrite = rate(prev.read, now.read), rate(prev.written, now.written)
	}
	if now.netOK && prev.netOK {
		m.NetRx, m.NetTx = rate(prev.rx, now.rx), rate(prev.tx, now.tx)
	}
	m.Served = rate(uint64(max(prev.served, 0)), uint64(max(now.served, 0)))
	if g := now.granted - prev.granted; g > 0 {
		m.QueueWaitUs = uint64((now.waitNanos - prev.waitNanos) / g / int64(time.Microsecond))
	}
	t.peak = max(t.peak, m.DiskRead+m.DiskWrite, m.Served)
	m.Capacity = t.peak
	if bw := t.s.cfg.QoSBandwidth; bw > 0 {
		m.Capacity, m.Configured = uint64(bw), true
	}
	return m
}
