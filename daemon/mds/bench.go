package mds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"github.com/valyala/fasthttp"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

// MetaBench is one run of the metadata benchmark with its baselines, all
// measured on the same machine in the same run so that their ratios mean
// something on shared hardware.
type MetaBench struct {
	Clients           int           // concurrent clients of every phase
	Duration          time.Duration // measured time of every kind of operation
	CreatesPerSec     float64       // creates as the client library sends them: coalesced into MCreateMany calls
	SingleCreates     float64       // creates with one MCreate call each
	StatsPerSec       float64       // getattrs as the client library sends them: coalesced into MGetattrMany calls
	SingleStats       float64       // getattrs with one MGetattr call each
	RaftAppliesPerSec float64       // raw raft.Apply of no-op commands, same log store and tuning, trivial FSM
	FasthttpPerSec    float64       // a bare fasthttp server answering a tiny POST
	Leftover          int           // goroutines running before the run started (left by earlier work in the process)

	// The process's CPU time (user and system, clients and servers
	// alike: they share the process) per operation of each phase. Load
	// from other processes moves it far less than the rates.
	CreateCPU, SingleCreateCPU, RaftCPU time.Duration
	StatCPU, SingleStatCPU, FasthttpCPU time.Duration
}

// CreateCPURatio is the CPU per coalesced create over the CPU per raw
// raft apply.
func (b MetaBench) CreateCPURatio() float64 { return float64(b.CreateCPU) / float64(b.RaftCPU) }

// StatCPURatio is the CPU per coalesced stat over the CPU per bare
// fasthttp request.
func (b MetaBench) StatCPURatio() float64 { return float64(b.StatCPU) / float64(b.FasthttpCPU) }

// CreateRatio is creates/s over raw raft applies/s (target ≥ 0.6).
func (b MetaBench) CreateRatio() float64 { return b.CreatesPerSec / b.RaftAppliesPerSec }

// SingleCreateRatio is single-call creates/s over raw raft applies/s.
func (b MetaBench) SingleCreateRatio() float64 { return b.SingleCreates / b.RaftAppliesPerSec }

// StatRatio is stats/s over fasthttp tiny requests/s (target ≥ 0.8).
func (b MetaBench) StatRatio() float64 { return b.StatsPerSec / b.FasthttpPerSec }

// SingleStatRatio is single-call stats/s over fasthttp tiny requests/s.
func (b MetaBench) SingleStatRatio() float64 { return b.SingleStats / b.FasthttpPerSec }

// String formats the run for `make bench`.
func (b MetaBench) String() string {
	return fmt.Sprintf("mds, %d clients, %v per operation: creates %.0f/s (one call each %.0f/s; raw raft %.0f/s, ratio %.2f; CPU %v/op, raw raft %v), stats %.0f/s (one call each %.0f/s; fasthttp tiny %.0f/s, ratio %.2f; CPU %v/op, fasthttp %v)",
		b.Clients, b.Duration, b.CreatesPerSec, b.SingleCreates, b.RaftAppliesPerSec, b.CreateRatio(), b.CreateCPU, b.RaftCPU,
		b.StatsPerSec, b.SingleStats, b.FasthttpPerSec, b.StatRatio(), b.StatCPU, b.FasthttpCPU)
}

// metaRounds is how many slices each operation's time is cut into: the
// phases of the baselines and of the MDS alternate (ABBA), so that what
// else runs on the machine, and what earlier work left running in the
// process (garbage to collect, page cache writeback), weighs on a figure
// and its baseline alike instead of on whichever phase it lands in.
const metaRounds = 4

// BenchMetadata measures, with clients concurrent clients, for d each:
// raw raft applies on raft-wal under dir, bare fasthttp tiny requests,
// MDS creates and stats (each coalesced, and one call each), in
// interleaved slices of d/metaRounds. dir must be on the disk whose fsync
// is to be measured; it is left with the phases' data.
func BenchMetadata(ctx context.Context, dir string, clients int, d time.Duration) (MetaBench, error) {
	res := MetaBench{Clients: clients, Duration: d, Leftover: runtime.NumGoroutine()}
	runtime.GC() // start from this run's own heap, not an earlier benchmark's garbage

	rr, err := startBenchRaft(ctx, filepath.Join(dir, "raft"))
	if err != nil {
		return res, err
	}
	defer rr.close()
	hs, err := startBenchHTTP(clients)
	if err != nil {
		return res, err
	}
	defer hs.close()
	bm, err := startBenchMDS(ctx, filepath.Join(dir, "mds"), clients, true)
	if err != nil {
		return res, err
	}
	defer bm.close()

	type phase struct {
		name    string
		op      func(ctx context.Context, worker int, seq int64) error
		rate    *float64
		cpuPer  *time.Duration
		n       int64
		el, cpu time.Duration
	}
	phases := []*phase{
		{name: "raw raft", op: rr.apply, rate: &res.RaftAppliesPerSec, cpuPer: &res.RaftCPU},
		{name: "create", op: bm.createCoalesced, rate: &res.CreatesPerSec, cpuPer: &res.CreateCPU},
		{name: "single create", op: bm.create, rate: &res.SingleCreates, cpuPer: &res.SingleCreateCPU},
		{name: "fasthttp", op: hs.call, rate: &res.FasthttpPerSec, cpuPer: &res.FasthttpCPU},
		{name: "stat", op: bm.statCoalesced, rate: &res.StatsPerSec, cpuPer: &res.StatCPU},
		{name: "single stat", op: bm.stat, rate: &res.SingleStats, cpuPer: &res.SingleStatCPU},
	}
	for r := 0; r < metaRounds; r++ {
		for i := range phases {
			p := phases[i]
			if r%2 == 1 {
				p = phases[len(phases)-1-i]
			}
			bm.pass++ // new names for the create phases
			cpu := processCPU()
			n, el, err := drive(ctx, clients, 0, d/metaRounds, p.op)
			if err != nil {
				return res, fmt.Errorf("%s phase: %w", p.name, err)
			}
			p.n, p.el, p.cpu = p.n+n, p.el+el, p.cpu+processCPU()-cpu
		}
	}
	for _, p := range phases {
		*p.rate = float64(p.n) / p.el.Seconds()
		if p.n > 0 {
			*p.cpuPer = p.cpu / time.Duration(p.n)
		}
	}
	return res, errors.Join(rr.close(), hs.close(), bm.close())
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drive runs op from clients goroutines until total operations are done
// (total > 0) or d has passed (d > 0), and returns how many were done and
// in how long. op gets the worker's number and a sequence number unique in
// the run.
func drive(ctx context.Context, clients int, total int64, d time.Duration, op func(ctx context.Context, worker int, seq int64) error) (int64, time.Duration, error) {
	if clients < 1 || (total <= 0 && d <= 0) {
		return 0, 0, errors.New("bench: need clients and a total or a duration")
	}
	var next, done atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				seq := next.Add(1) - 1
				if total > 0 && seq >= total {
					return
				}
				if d > 0 && seq%64 == 0 && time.Now().After(deadline) {
					stop.Store(true)
					return
				}
				if err := op(ctx, w, seq); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return done.Load(), el, firstErr
}

// benchTimeout is the raft timeout of the benchmark's servers: short, so
// that a single voter elects itself quickly.
const benchTimeout = 100 * time.Millisecond

// benchRaft is a raw raft on raft-wal with a trivial FSM: the baseline of
// creates/s.
type benchRaft struct {
	node    *raftNode
	payload []byte
	once    sync.Once
	err     error
}

// nopFSM applies nothing.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}

func startBenchRaft(ctx context.Context, dir string) (*benchRaft, error) {
	node, err := openRaft(raftOptions{
		ID:                "bench",
		Addr:              "127.0.0.1:0",
		Dir:               dir,
		Timeout:           benchTimeout,
		SnapshotThreshold: DefaultConfig().SnapshotThreshold,
		Log:               newHclog(slog.New(slog.DiscardHandler), "raft"),
		Secret:            make([]byte, capability.SecretSize),
	}, nopFSM{})
	if err != nil {
		return nil, fmt.Errorf("bench raft: %w", err)
	}
	r := &benchRaft{node: node, payload: make([]byte, 80)} // about a create command
	if err := waitLeader(ctx, node.raft); err != nil {
		return nil, errors.Join(err, node.close())
	}
	return r, nil
}

func waitLeader(ctx context.Context, r *raft.Raft) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ch := r.LeaderCh()
	for r.State() != raft.Leader {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench raft: no leader: %w", ctx.Err())
		case <-ch:
		}
	}
	return r.Barrier(0).Error()
}

func (r *benchRaft) apply(context.Context, int, int64) error {
	return r.node.raft.Apply(r.payload, applyTimeout).Error()
}

func (r *benchRaft) close() error {
	r.once.Do(func() { r.err = r.node.close() })
	return r.err
}

// benchHTTP is a bare fasthttp server answering a tiny POST, and a client
// pool as large as the number of clients: the baseline of stats/s.
type benchHTTP struct {
	srv  *fasthttp.Server
	hc   *fasthttp.HostClient
	uri  string
	done chan error
	once sync.Once
	err  error
}

func startBenchHTTP(clients int) (*benchHTTP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench http: %w", err)
	}
	h := &benchHTTP{
		srv: &fasthttp.Server{
			Handler:               func(rc *fasthttp.RequestCtx) { rc.SetBody(rc.PostBody()[:min(len(rc.PostBody()), 8)]) },
			NoDefaultServerHeader: true,
			NoDefaultDate:         true,
			NoDefaultContentType:  true,
			CloseOnShutdown:       true,
		},
		hc:   &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: clients},
		uri:  "http://" + ln.Addr().String() + "/tiny",
		done: make(chan error, 1),
	}
	go func() { h.done <- h.srv.Serve(ln) }()
	return h, nil
}

func (h *benchHTTP) call(context.Context, int, int64) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(h.uri)
	req.SetBodyString("0123456789abcdef")
	if err := h.hc.DoTimeout(req, resp, 10*time.Second); err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("bench http: status %d", resp.StatusCode())
	}
	return nil
}

func (h *benchHTTP) close() error {
	h.once.Do(func() {
		h.hc.CloseIdleConnections()
		h.err = h.srv.Shutdown()
		if serr := <-h.done; h.err == nil && serr != nil && !errors.Is(serr, net.ErrClosed) {
			h.err = serr
		}
	})
	return h.err
}

// benchMDS is a metadata server with four fake data servers, a directory
// per client and one rpc.Client shared by the clients.
type benchMDS struct {
	s    *Server
	c    *rpc.Client
	co   *rpc.Coalescer[rpc.CreateReq, rpc.CreateManyItem]
	ga   *rpc.Coalescer[uint64, rpc.AttrItem]
	dirs []uint64
	inos [][]uint64 // per worker: files it created, for stat
	pass int        // create phases run so far: names differ per phase
	once sync.Once
	err  error
}

// startBenchMDS starts the benchmark's MDS: with auth, its clients call
// with a user's session token (root's, as a verified MUNGE credential
// would have opened it) and its fake data servers with their node
// credentials; without, it takes every caller's word (Config.NoAuth).
func startBenchMDS(ctx context.Context, dir string, clients int, auth bool) (*benchMDS, error) {
	secret, err := capability.NewSecret()
	if err != nil {
		return nil, err
	}
	cfg := DefaultConfig()
	cfg.Listen, cfg.RaftAddr, cfg.Dir, cfg.Secret = "127.0.0.1:0", "127.0.0.1:0", dir, secret
	cfg.RaftTimeout = benchTimeout
	cfg.NoAuth = !auth
	keys := identity.DeriveKeys(secret)
	sess := identity.Session{ID: 1, Node: "127.0.0.1", Expiry: time.Now().Add(24 * time.Hour).UnixNano()}
	sess.Sign(keys)
	userHeader := identity.FormatHeader(identity.SchemeSession, sess.Encode())
	cc := rpc.ClientConfig{MaxConnsPerHost: clients}
	if auth {
		cc.Auth = func(context.Context) (string, error) { return userHeader, nil }
	}
	cfg.HeartbeatTimeout = 24 * time.Hour // the fake data servers beat once
	s, err := New(cfg, Deps{})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	b := &benchMDS{s: s, c: rpc.NewClient(cc), inos: make([][]uint64, clients)}
	b.co = rpc.NewCoalescer(rpc.MaxCreateMany, 4, func(ctx context.Context, items []rpc.CreateReq) ([]rpc.CreateManyItem, error) {
		var r rpc.CreateManyResp
		err := b.c.Call(ctx, s.Addr(), rpc.MCreateMany, &rpc.CreateManyReq{Items: items}, &r)
		return r.Items, err
	})
	b.ga = rpc.NewCoalescer(rpc.MaxGetattrMany, 4, func(ctx context.Context, inos []uint64) ([]rpc.AttrItem, error) {
		var r rpc.GetattrManyResp
		err := b.c.Call(ctx, s.Addr(), rpc.MGetattrMany, &rpc.GetattrManyReq{Inos: inos}, &r)
		return r.Items, err
	})
	fail := func(err error) (*benchMDS, error) { return nil, errors.Join(err, b.close()) }
	select {
	case <-s.Ready():
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	for i := 0; i < 4; i++ {
		id := "bench-ds" + strconv.Itoa(i)
		hb := &rpc.HeartbeatReq{ID: id, Node: id, Addr: "127.0.0.1:1", Capacity: 1 << 44, Free: 1 << 43}
		h, _ := identity.NewNodeCredentials(secret, identity.RoleDS, id, id).Header(ctx)
		if err := b.c.Call(rpc.WithAuthorization(ctx, h), s.Addr(), rpc.MHeartbeat, hb, &rpc.HeartbeatResp{}); err != nil {
			return fail(err)
		}
	}
	for w := 0; w < clients; w++ {
		var a rpc.AttrResp
		req := &rpc.MkdirReq{Parent: rpc.RootIno, Name: "client" + strconv.Itoa(w), Mode: 0o755}
		if err := b.c.Call(ctx, s.Addr(), rpc.MMkdir, req, &a); err != nil {
			return fail(err)
		}
		b.dirs = append(b.dirs, a.Attr.Ino)
	}
	return b, nil
}

// create makes a new file in the worker's directory.
func (b *benchMDS) create(ctx context.Context, w int, seq int64) error {
	var r rpc.CreateResp
	req := &rpc.CreateReq{Parent: b.dirs[w], Name: "f" + strconv.Itoa(b.pass) + "-" + strconv.FormatInt(seq, 10), Mode: 0o644, Exclusive: true}
	if err := b.c.Call(ctx, b.s.Addr(), rpc.MCreate, req, &r); err != nil {
		return err
	}
	if len(b.inos[w]) < 4096 {
		b.inos[w] = append(b.inos[w], r.Attr.Ino)
	}
	return nil
}

// createCoalesced makes a new file in the worker's directory, its call
// coalesced with those of the other workers (rpc.Coalescer, MCreateMany).
func (b *benchMDS) createCoalesced(ctx context.Context, w int, seq int64) error {
	req := rpc.CreateReq{Parent: b.dirs[w], Name: "f" + strconv.Itoa(b.pass) + "-" + strconv.FormatInt(seq, 10) + "m", Mode: 0o644, Exclusive: true}
	it, err := b.co.Do(ctx, "", req)
	if err != nil {
		return err
	}
	r, err := it.Result()
	if err != nil {
		return err
	}
	if len(b.inos[w]) < 4096 {
		b.inos[w] = append(b.inos[w], r.Attr.Ino)
	}
	return nil
}

// stat gets the attributes of one of the files the worker created, or of
// its directory.
func (b *benchMDS) stat(ctx context.Context, w int, seq int64) error {
	ino := b.dirs[w]
	if n := len(b.inos[w]); n > 0 {
		ino = b.inos[w][seq%int64(n)]
	}
	var r rpc.AttrResp
	return b.c.Call(ctx, b.s.Addr(), rpc.MGetattr, &rpc.InoReq{Ino: ino}, &r)
}

// statCoalesced is stat with its call coalesced with those of the other
// workers (rpc.Coalescer, MGetattrMany).
func (b *benchMDS) statCoalesced(ctx context.Context, w int, seq int64) error {
	ino := b.dirs[w]
	if n := len(b.inos[w]); n > 0 {
		ino = b.inos[w][seq%int64(n)]
	}
	it, err := b.ga.Do(ctx, "", ino)
	if err != nil {
		return err
	}
	_, err = it.Result()
	return err
}

func (b *benchMDS) close() error {
	b.once.Do(func() {
		b.co.Close()
		b.ga.Close()
		b.c.Close()
		b.err = b.s.Close()
	})
	return b.err
}

// AuthBench is one run of the authentication benchmark: the same MDS
// workload with authentication on (every call carries a session token the
// MDS verifies) and off.
type AuthBench struct {
	Clients    int
	Duration   time.Duration // of each mode and operation, all phases
	Pairs      int           // adjacent off/on phase pairs per operation
	CreatesOn  float64
	CreatesOff float64
	StatsOn    float64
	StatsOff   float64
	// Median over the pairs of the on/off ratio of two adjacent phases:
	// what the figures are judged by, as a burst of load on the shared
	// machine moves one pair, not the sums.
	CreateMedian, StatMedian float64
	// The process's CPU time (clients and server alike) per operation.
	CreateCPUOn, CreateCPUOff, StatCPUOn, StatCPUOff time.Duration
}

// CreateRatio is the median over adjacent phase pairs of creates/s with
// authentication over creates/s without.
func (b AuthBench) CreateRatio() float64 { return b.CreateMedian }

// StatRatio is the median over adjacent phase pairs of stats/s with
// authentication over stats/s without.
func (b AuthBench) StatRatio() float64 { return b.StatMedian }

// authPairs is the number of adjacent off/on phase pairs per operation.
const authPairs = 12

// BenchAuth measures creates and stats with clients concurrent clients
// against an MDS with authentication on and one with it off, in
// 2*authPairs phases of length d/authPairs per operation ordered off, on,
// on, off, ... (so that the drift of a shared machine weighs on both
// alike). Each adjacent pair gives one on/off ratio and the figure is their
// median; the sums give the rates.
func BenchAuth(ctx context.Context, dir string, clients int, d time.Duration) (AuthBench, error) {
	res := AuthBench{Clients: clients, Duration: d, Pairs: authPairs}
	var ms [2]*benchMDS // off, on
	for i := range ms {
		m, err := startBenchMDS(ctx, filepath.Join(dir, "mds"+strconv.Itoa(i)), clients, i == 1)
		if err != nil {
			for _, o := range ms[:i] {
				_ = o.close()
			}
			return res, err
		}
		defer m.close()
		ms[i] = m
	}
	phase := d / authPairs
	// run drives op in 2*authPairs alternating phases and returns the
	// rates per mode, the median pair ratio and the CPU per op per mode.
	run := func(name string, op func(*benchMDS) func(context.Context, int, int64) error) (rate [2]float64, median float64, cpu [2]time.Duration, err error) {
		var n [2]int64
		var el, used [2]time.Duration
		ratios := make([]float64, 0, authPairs)
		for p := 0; p < authPairs; p++ {
			order := [2]int{0, 1}
			if p%2 == 1 {
				order = [2]int{1, 0}
			}
			var pr [2]float64
			for _, mode := range order {
				if name == "create" {
					ms[mode].pass++
				}
				c0 := processCPU()
				k, e, derr := drive(ctx, clients, 0, phase, op(ms[mode]))
				if derr != nil {
					return rate, 0, cpu, fmt.Errorf("%s phase: %w", name, derr)
				}
				used[mode] += processCPU() - c0
				n[mode], el[mode] = n[mode]+k, el[mode]+e
				pr[mode] = float64(k) / e.Seconds()
			}
			ratios = append(ratios, pr[1]/pr[0])
		}
		for m := range rate {
			rate[m] = float64(n[m]) / el[m].Seconds()
			if n[m] > 0 {
				cpu[m] = used[m] / time.Duration(n[m])
			}
		}
		sort.Float64s(ratios)
		median = (ratios[(len(ratios)-1)/2] + ratios[len(ratios)/2]) / 2
		return rate, median, cpu, nil
	}
	cr, cm, cc, err := run("create", func(m *benchMDS) func(context.Context, int, int64) error { return m.create })
	if err != nil {
		return res, err
	}
	sr, sm, sc, err := run("stat", func(m *benchMDS) func(context.Context, int, int64) error { return m.stat })
	if err != nil {
		return res, err
	}
	res.CreatesOff, res.CreatesOn, res.CreateMedian = cr[0], cr[1], cm
	res.StatsOff, res.StatsOn, res.StatMedian = sr[0], sr[1], sm
	res.CreateCPUOff, res.CreateCPUOn, res.StatCPUOff, res.StatCPUOn = cc[0], cc[1], sc[0], sc[1]
	return res, errors.Join(ms[0].close(), ms[1].close())
}
