package ds

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-hpc/strata/qos"
)

// fakeMeter is a machine whose counters the test sets.
type fakeMeter struct {
	device                string
	read, written, rx, tx uint64
}

func (m *fakeMeter) Disk(context.Context, string) (string, uint64, uint64, error) {
	return m.device, m.read, m.written, nil
}

func (m *fakeMeter) Net(context.Context) (uint64, uint64, error) { return m.rx, m.tx, nil }

// TestTelemetryRates: a heartbeat reports what the disk, the network and
// the scheduler did over its interval, the mean queue wait, and as
// capacity the most delivered so far, or qos_bandwidth when set.
func TestTelemetryRates(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	m := &fakeMeter{device: "vdb"}
	sched := qos.NewScheduler(qos.SchedulerConfig{Clock: clock})
	defer sched.Close()
	s := &Server{cfg: Config{Dir: t.TempDir()}, log: slog.New(slog.DiscardHandler), clock: clock, meter: m, qos: sched}
	tel := telemetry{s: s}
	ctx := context.Background()
	if got := tel.measure(ctx); got != nil {
		t.Fatalf("first measure: %+v, want none (no interval yet)", got)
	}
	serve := func(n int64) {
		release, err := sched.Acquire(ctx, qos.Tag{Class: qos.ClassIO}, n)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	// Two seconds: the disk reads 400 MB and writes 200 MB, the network
	// moves 100 MB each way, the scheduler serves 300 MB.
	now = now.Add(2 * time.Second)
	m.read, m.written, m.rx, m.tx = 400e6, 200e6, 100e6, 100e6
	serve(300e6)
	got := tel.measure(ctx)
	if got == nil || got.DiskRead != 200e6 || got.DiskWrite != 100e6 || got.NetRx != 50e6 || got.NetTx != 50e6 || got.Served != 150e6 || got.Device != "vdb" {
		t.Fatalf("measure: %+v", got)
	}
	if got.Capacity != 300e6 || got.Configured {
		t.Fatalf("capacity %d (configured %v), want 300 MB/s seen (disk read + write)", got.Capacity, got.Configured)
	}
	// A quiet second: the rates fall to 0, the capacity seen stays.
	now = now.Add(time.Second)
	got = tel.measure(ctx)
	if got.DiskRead != 0 || got.Served != 0 || got.Capacity != 300e6 {
		t.Fatalf("quiet second: %+v", got)
	}
	// The device's counters go back (replaced): no rate, no error.
	now = now.Add(time.Second)
	m.read = 0
	if got = tel.measure(ctx); got.DiskRead != 0 {
		t.Fatalf("counter reset: disk read %d B/s", got.DiskRead)
	}
	// With qos_bandwidth set, that is the capacity.
	s.cfg.QoSBandwidth = 1 << 30
	now = now.Add(time.Second)
	if got = tel.measure(ctx); got.Capacity != 1<<30 || !got.Configured {
		t.Fatalf("qos_bandwidth 1 GiB/s: capacity %d, configured %v", got.Capacity, got.Configured)
	}
}

// TestSystemMeterFindsTheDisk: the real meter finds the block device of
// a directory on one (the test's temporary directory, unless it is on a
// tmpfs or overlay) and reads counters that only grow.
func TestSystemMeterFindsTheDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dev, r1, w1, err := SystemMeter{}.Disk(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if dev == "" {
		t.Logf("%s is on no block device: disk rates are not measured there", dir)
	} else {
		_, r2, w2, err := SystemMeter{}.Disk(ctx, dir)
		if err != nil || r2 < r1 || w2 < w1 {
			t.Fatalf("%s: counters %d/%d then %d/%d, %v", dev, r1, w1, r2, w2, err)
		}
	}
	if _, _, err := (SystemMeter{}).Net(ctx); err != nil {
		t.Fatal(err)
	}
	// The meter a server uses keeps the device it found, and reads the
	// same counters.
	m := NewSystemMeter()
	for range 2 {
		d, r3, w3, err := m.Disk(ctx, dir)
		if err != nil || d != dev || r3 < r1 || w3 < w1 {
			t.Fatalf("%s: the caching meter says %q, counters %d/%d, %v", dir, d, r3, w3, err)
		}
	}
}
