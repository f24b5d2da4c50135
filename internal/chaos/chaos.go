package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/localcluster"
)

// Options configures one chaos run. Zero fields take the defaults given.
type Options struct {
	Seed     uint64        // the schedule's seed
	Dir      string        // the cluster's data; required
	Duration time.Duration // how long faults are injected; default 20s
	MDS      int           // MDS voters; default 3
	DS       int           // data servers; default 8
	Writers  int           // writing clients; default 3
	MaxFile  int           // largest file in bytes; default 384 KiB
	MaxFiles int           // files each writer creates at most (then it overwrites and reads); default 100
	Settle   time.Duration // how long the cluster may take to heal at the end; default 3m
	Log      *slog.Logger  // the daemons' log; nil discards
	Logf     func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Duration == 0 {
		o.Duration = 20 * time.Second
	}
	if o.MDS == 0 {
		o.MDS = 3
	}
	if o.DS == 0 {
		o.DS = 8
	}
	if o.Writers == 0 {
		o.Writers = 3
	}
	if o.MaxFile == 0 {
		o.MaxFile = 384 << 10
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = 100
	}
	if o.Settle == 0 {
		o.Settle = 3 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// The layouts the writers use, one of each scheme.
var schemes = []struct{ name, spec string }{
	{"none", "width=2,unit=64K,scheme=none"},
	{"mirror:2", "width=2,unit=64K,scheme=mirror:2"},
	{"rs:4+2", "unit=64K,scheme=rs:4+2"},
}

// Fault is one injected fault.
type Fault struct {
	At     time.Duration // since the run started
	Kind   string        // ds-kill, ds-restart, ds-blip, mds-kill, mds-kill-leader, mds-restart
	Target string
}

func (f Fault) String() string {
	return fmt.Sprintf("%6.2fs %-15s %s", f.At.Seconds(), f.Kind, f.Target)
}

// Report is what a run did and found.
type Report struct {
	Seed          uint64
	Faults        []Fault
	Acked         map[string]int // acknowledged files by scheme
	Unacked       int            // writes that failed (not acknowledged: not verified)
	MidReads      int            // reads of acknowledged files while faults ran
	MidReadErrs   int            // of which failed (allowed: never wrong bytes)
	Verified      int            // files read back byte-exact at the end
	VerifiedBytes int64
	Lost          []string // none files with a component on a data server down at the end
	Rebuilt       uint64   // components rebuilt or moved, as the MDS processes alive at the end count them
	Repaired      uint64   // components marked stale by LAYOUTERROR, as they count them
	Violations    []string // wrong bytes, lost acknowledged writes, unhealthy layouts
}

// Faulted reports whether the run found a violation.
func (r *Report) Faulted() bool { return len(r.Violations) > 0 }

// String is the run's summary: the seed, the faults, the bytes verified.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos seed %d (replay with STRATA_CHAOS_SEED=%d): %d faults injected:\n", r.Seed, r.Seed, len(r.Faults))
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	var acked []string
	for _, s := range schemes {
		acked = append(acked, fmt.Sprintf("%s %d", s.name, r.Acked[s.name]))
	}
	fmt.Fprintf(&b, "acknowledged files: %s; unacknowledged writes: %d\n", strings.Join(acked, ", "), r.Unacked)
	fmt.Fprintf(&b, "reads during faults: %d, %d failed (never wrong bytes)\n", r.MidReads, r.MidReadErrs)
	fmt.Fprintf(&b, "components marked stale by failed writes: %d; rebuilt or moved: %d (counted by the MDS processes alive at the end)\n", r.Repaired, r.Rebuilt)
	fmt.Fprintf(&b, "verified at the end: %d files, %d bytes byte-exact; lost none files: %d\n", r.Verified, r.VerifiedBytes, len(r.Lost))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION: %s\n", v)
	}
	return b.String()
}

// file is an acknowledged file and what it must read back.
type file struct {
	name   string
	scheme string
	data   []byte
}

// run is one chaos run's state.
type run struct {
	o     Options
	cl    *localcluster.Cluster
	start time.Time

	mu     sync.Mutex
	report *Report
	files  map[string]*file
}

func (r *run) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Violations = append(r.report.Violations, fmt.Sprintf(format, args...))
}

// Run starts a cluster of o.MDS voters and o.DS data servers in process,
// injects faults for o.Duration on a schedule drawn from o.Seed while
// writers create, overwrite and read files in every scheme, then restarts
// every stopped node, waits until every file's layout is healthy (no stale
// component, none on a data server that is down) and reads every
// acknowledged file back. The report lists every violation; an error is a
// run that could not be carried out.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	if o.Dir == "" {
		return nil, errors.New("chaos: no directory")
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := localcluster.Start(sctx, localcluster.Options{
		Dir:               o.Dir,
		DS:                o.DS,
		MDS:               o.MDS,
		AdminAddr:         "-",
		Log:               o.Log,
		RaftTimeout:       100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		HeartbeatTimeout:  time.Second,
		MDSConfig: func(c *mds.Config) {
			c.RebuildDelay = 500 * time.Millisecond // so that servers down for seconds are rebuilt elsewhere
			c.CapabilityTTL = 4 * time.Second
		},
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: start cluster: %w", err)
	}
	defer cl.Close()
	r := &run{o: o, cl: cl, start: time.Now(), files: map[string]*file{},
		report: &Report{Seed: o.Seed, Acked: map[string]int{}}}
	o.Logf("chaos seed %d: %d MDS voters, %d data servers, %d writers, faults for %v", o.Seed, o.MDS, o.DS, o.Writers, o.Duration)

	fctx, stop := context.WithTimeout(ctx, o.Duration)
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < o.Writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.write(ctx, fctx, w)
		}()
	}
	injErr := r.inject(ctx, fctx)
	wg.Wait()
	if injErr != nil {
		return r.report, injErr
	}
	if err := r.heal(ctx); err != nil {
		return r.report, err
	}
	r.verify(ctx)
	r.count()
	return r.report, nil
}

// count adds up the failure-handling counters of the MDS replicas.
func (r *run) count() {
	for i := 0; i < r.o.MDS; i++ {
		m := r.cl.MDSReplica(i)
		if m == nil {
			continue
		}
		var b bytes.Buffer
		if err := m.WriteMetrics(&b); err != nil {
			continue
		}
		for _, line := range strings.Split(b.String(), "\n") {
			var n uint64
			if _, err := fmt.Sscanf(line, "strata_mds_rebuilt_components_total %d", &n); err == nil {
				r.report.Rebuilt += n
			}
			if _, err := fmt.Sscanf(line, "strata_mds_layouterror_stale_total %d", &n); err == nil {
				r.report.Repaired += n
			}
		}
	}
}

// newClient is a client of the cluster with short timeouts, so that a
// write to a stopped server fails in seconds rather than minutes.
func (r *run) newClient() (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.MDS = r.cl.MDSAddr()
	cfg.Auth = r.cl.Credentials()
	cfg.Timeout = 10 * time.Second
	cfg.FailoverTimeout = 20 * time.Second
	cfg.ChunkSize = 256 << 10
	return client.New(cfg)
}

// inject runs the fault schedule until fctx ends. It draws every choice
// from the seed: which fault, on which node, after how long.
func (r *run) inject(ctx, fctx context.Context) error {
	rnd := rand.New(rand.NewPCG(r.o.Seed, 0xc4a05))
	dsDown := map[int]bool{}
	mdsDown := -1
	for {
		pause := time.Duration(200+rnd.IntN(900)) * time.Millisecond
		select {
		case <-fctx.Done():
			return nil
		case <-time.After(pause):
		}
		var choices []string
		if len(dsDown) < 2 {
			choices = append(choices, "ds-kill", "ds-kill", "ds-blip")
		}
		if len(dsDown) > 0 {
			choices = append(choices, "ds-restart", "ds-restart")
		}
		if mdsDown < 0 {
			choices = append(choices, "mds-kill", "mds-kill-leader")
		} else {
			choices = append(choices, "mds-restart", "mds-restart")
		}
		kind := choices[rnd.IntN(len(choices))]
		var target string
		var err error
		switch kind {
		case "ds-kill", "ds-blip":
			i := pick(rnd, r.o.DS, func(i int) bool { return !dsDown[i] })
			target = localcluster.DSID(i)
			if err = r.cl.StopDS(i); err == nil && kind == "ds-blip" {
				err = r.cl.StartDS(ctx, i)
			} else if err == nil {
				dsDown[i] = true
			}
		case "ds-restart":
			i := pick(rnd, r.o.DS, func(i int) bool { return dsDown[i] })
			target = localcluster.DSID(i)
			if err = r.cl.StartDS(ctx, i); err == nil {
				delete(dsDown, i)
			}
		case "mds-kill", "mds-kill-leader":
			i := rnd.IntN(r.o.MDS)
			if l := r.cl.Leader(); kind == "mds-kill-leader" && l >= 0 {
				i = l
			}
			target = fmt.Sprintf("mds%d", i+1)
			if err = r.cl.StopMDSReplica(i); err == nil {
				mdsDown = i
			}
		case "mds-restart":
			target = fmt.Sprintf("mds%d", mdsDown+1)
			if err = r.cl.StartMDSReplica(ctx, mdsDown); err == nil {
				mdsDown = -1
			}
		}
		if err != nil {
			return fmt.Errorf("chaos: %s %s: %w", kind, target, err)
		}
		f := Fault{At: time.Since(r.start), Kind: kind, Target: target}
		r.mu.Lock()
		r.report.Faults = append(r.report.Faults, f)
		r.mu.Unlock()
		r.o.Logf("fault %s", f)
	}
}

// pick returns a random index below n for which ok holds (there is one).
func pick(rnd *rand.Rand, n int, ok func(int) bool) int {
	var cands []int
	for i := 0; i < n; i++ {
		if ok(i) {
			cands = append(cands, i)
		}
	}
	return cands[rnd.IntN(len(cands))]
}

// write is writer w: until fctx ends it creates files of every scheme,
// sometimes overwrites a range of one of its acknowledged files, and reads
// one back. A file whose create, writes and close all succeeded is
// acknowledged and must read back at the end; an overwrite that failed
// makes its file's content unknown, so it is no longer checked.
func (r *run) write(ctx, fctx context.Context, w int) {
	rnd := rand.New(rand.NewPCG(r.o.Seed, uint64(w+1)))
	c, err := r.newClient()
	if err != nil {
		r.violation("writer %d: %v", w, err)
		return
	}
	defer c.Close()
	if err := c.Mkdir(ctx, fmt.Sprintf("/w%d", w), 0o755); err != nil && !errors.Is(err, syscall.EEXIST) {
		r.o.Logf("writer %d: mkdir: %v", w, err)
	}
	var mine []*file
	logged := 0
	for n := 0; fctx.Err() == nil; n++ {
		switch {
		case len(mine) > 0 && (rnd.IntN(4) == 0 || len(mine) >= r.o.MaxFiles && rnd.IntN(2) == 0):
			f := mine[rnd.IntN(len(mine))]
			r.overwrite(ctx, c, rnd, f)
		case len(mine) > 0 && (rnd.IntN(3) == 0 || len(mine) >= r.o.MaxFiles):
			r.readBack(ctx, mine[rnd.IntN(len(mine))])
		default:
			s := schemes[rnd.IntN(len(schemes))]
			f := &file{name: fmt.Sprintf("/w%d/f%d-%s", w, n, strings.ReplaceAll(s.name, ":", "")), scheme: s.name}
			f.data = make([]byte, 1+rnd.IntN(r.o.MaxFile))
			fill(rnd, f.data)
			if err := r.create(ctx, c, rnd, f, s.spec); err != nil {
				if logged++; logged <= 3 {
					r.o.Logf("writer %d: %s not acknowledged: %v", w, f.name, err)
				}
				r.mu.Lock()
				r.report.Unacked++
				r.mu.Unlock()
				continue
			}
			mine = append(mine, f)
			r.mu.Lock()
			r.files[f.name] = f
			r.report.Acked[f.scheme]++
			r.mu.Unlock()
		}
	}
}

func fill(rnd *rand.Rand, p []byte) {
	for i := 0; i < len(p); i += 8 {
		v := rnd.Uint64()
		for j := 0; j < 8 && i+j < len(p); j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
}

// create writes f in one to three pieces and closes it.
func (r *run) create(ctx context.Context, c *client.Client, rnd *rand.Rand, f *file, spec string) error {
	h, err := c.OpenFileLayout(ctx, f.name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644, spec)
	if err != nil {
		return err
	}
	cuts := []int{0, len(f.data)}
	for k := rnd.IntN(3); k > 0; k-- {
		cuts = append(cuts, rnd.IntN(len(f.data)))
	}
	slices.Sort(cuts)
	for i := 0; i+1 < len(cuts); i++ {
		if cuts[i] == cuts[i+1] {
			continue
		}
		if _, err := h.WriteAt(f.data[cuts[i]:cuts[i+1]], int64(cuts[i])); err != nil {
			_ = h.Close()
			return err
		}
	}
	return h.Close()
}

// overwrite writes a random range of f (within and past its end) and
// updates what it must read back, or drops it if the write failed.
func (r *run) overwrite(ctx context.Context, c *client.Client, rnd *rand.Rand, f *file) {
	r.mu.Lock()
	if r.files[f.name] == nil {
		r.mu.Unlock()
		return // dropped after a failed overwrite
	}
	r.mu.Unlock()
	off := rnd.IntN(len(f.data) + 1)
	p := make([]byte, 1+rnd.IntN(128<<10))
	fill(rnd, p)
	h, err := c.OpenFile(ctx, f.name, os.O_RDWR, 0)
	if err == nil {
		_, err = h.WriteAt(p, int64(off))
		if cerr := h.Close(); err == nil {
			err = cerr
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		delete(r.files, f.name)
		r.report.Acked[f.scheme]--
		r.report.Unacked++
		return
	}
	if end := off + len(p); end > len(f.data) {
		f.data = append(f.data, make([]byte, end-len(f.data))...)
	}
	copy(f.data[off:], p)
}

// readBack reads an acknowledged file while faults run: failing is
// allowed, wrong bytes are not.
func (r *run) readBack(ctx context.Context, f *file) {
	r.mu.Lock()
	if r.files[f.name] == nil {
		r.mu.Unlock()
		return
	}
	want := slices.Clone(f.data)
	r.mu.Unlock()
	c, err := r.newClient()
	if err != nil {
		return
	}
	defer c.Close()
	got, err := readAll(ctx, c, f.name)
	r.mu.Lock()
	r.report.MidReads++
	if err != nil {
		r.report.MidReadErrs++
	}
	r.mu.Unlock()
	if err == nil && !bytes.Equal(got, want) {
		r.violation("%s (%s) read %d wrong bytes while faults ran", f.name, f.scheme, diff(got, want))
	}
}

func readAll(ctx context.Context, c *client.Client, name string) ([]byte, error) {
	h, err := c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, io.NewSectionReader(h, 0, h.Size()))
	return b.Bytes(), err
}

// diff counts the bytes that differ, the length difference included.
func diff(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// heal restarts every stopped node and waits until every data server is up
// and every acknowledged file's layout is healthy.
func (r *run) heal(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, r.o.Settle)
	defer cancel()
	for i := 0; i < r.o.MDS; i++ {
		if r.cl.MDSReplica(i) == nil {
			if err := r.cl.StartMDSReplica(hctx, i); err != nil {
				return fmt.Errorf("chaos: restart mds%d: %w", i+1, err)
			}
		}
	}
	for i := 0; i < r.o.DS; i++ {
		if r.cl.DS(i) == nil {
			if err := r.cl.StartDS(hctx, i); err != nil {
				return fmt.Errorf("chaos: restart %s: %w", localcluster.DSID(i), err)
			}
		}
	}
	if err := r.cl.WaitDS(hctx, r.o.DS); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	c, err := r.newClient()
	if err != nil {
		return err
	}
	defer c.Close()
	r.mu.Lock()
	names := make([]string, 0, len(r.files))
	for n := range r.files {
		names = append(names, n)
	}
	r.mu.Unlock()
	slices.Sort(names)
	up := map[string]bool{}
	for i := 0; i < r.o.DS; i++ {
		up[localcluster.DSID(i)] = true
	}
	healed := time.Now()
	for _, n := range names {
		for {
			info, err := c.GetLayout(hctx, n)
			why := ""
			switch {
			case err != nil:
				why = err.Error()
			case len(info.Stale) > 0:
				why = fmt.Sprintf("stale components %v", info.Stale)
			default:
				for _, t := range info.Layout.Targets {
					if !up[t] {
						why = "a component on " + t
					}
				}
			}
			if why == "" {
				break
			}
			if hctx.Err() != nil {
				st, _ := c.RebuildStatus(ctx)
				r.violation("%s not healthy %v after the faults: %s (rebuild status %+v)", n, r.o.Settle, why, st)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r.o.Logf("healthy %.1fs after the last fault", time.Since(healed).Seconds())
	return nil
}

// verify reads every acknowledged file back through a fresh client.
func (r *run) verify(ctx context.Context) {
	c, err := r.newClient()
	if err != nil {
		r.violation("verify: %v", err)
		return
	}
	defer c.Close()
	r.mu.Lock()
	files := make([]*file, 0, len(r.files))
	for _, f := range r.files {
		files = append(files, f)
	}
	r.mu.Unlock()
	slices.SortFunc(files, func(a, b *file) int { return strings.Compare(a.name, b.name) })
	for _, f := range files {
		if f.scheme == "none" && r.onStoppedServer(ctx, c, f.name) {
			r.report.Lost = append(r.report.Lost, f.name) // reported, never read as data
			continue
		}
		got, err := readAll(ctx, c, f.name)
		switch {
		case err != nil:
			r.violation("%s (%s, acknowledged) does not read back: %v", f.name, f.scheme, err)
		case !bytes.Equal(got, f.data):
			r.violation("%s (%s, acknowledged) reads back %d wrong bytes", f.name, f.scheme, diff(got, f.data))
		default:
			r.report.Verified++
			r.report.VerifiedBytes += int64(len(got))
		}
	}
}

// onStoppedServer reports whether a component of name is on a data
// server that is stopped.
func (r *run) onStoppedServer(ctx context.Context, c *client.Client, name string) bool {
	info, err := c.GetLayout(ctx, name)
	if err != nil {
		return false
	}
	for _, t := range info.Layout.Targets {
		for i := 0; i < r.o.DS; i++ {
			if localcluster.DSID(i) == t && r.cl.DS(i) == nil {
				return true
			}
		}
	}
	return false
}
