package ds

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/qos"
)

// The QoS tests run a real data server paced to qosBandwidth, far under
// what a loaded 2-core machine serves (tens of MB/s), so the scheduler and
// not the CPU is the bottleneck. Every client keeps a deep queue at the
// server and no client paces itself: what a job gets is what the
// scheduler grants it (its weights, reservations and limits). Rates are
// the bytes the scheduler served each job over a window, compared as
// ratios within one run.
const (
	qosBandwidth = 2 << 20
	qosChunk     = 64 << 10
	qosWindow    = 4 * time.Second
	// qosLimitWindow is the window over which a job limit must hold
	// (issue 13: within 10% over 10 s). A limit lets a job run ahead of
	// it by at most the scheduler's pacer burst (a quarter second) and
	// one request in any window, 3% of 10 s.
	qosLimitWindow = 10 * time.Second
	qosSettle      = time.Second // after a change, before a window
	qosWorkers     = 12          // requests each job keeps in flight
)

// qosWorkload is a set of tagged clients streaming to one data server.
type qosWorkload struct {
	h       *harness
	cancel  map[string]context.CancelFunc
	running map[string]bool
	wg      sync.WaitGroup
	errs    chan error
}

func newQoSHarness(t *testing.T) *harness {
	// Two requests in service at once: when a loaded machine is slower
	// than qosBandwidth, requests still queue at the scheduler, which
	// decides their order.
	return newHarness(t, func(c *Config, _ *Deps) { c.QoSBandwidth, c.QoSMaxInflight = qosBandwidth, 2 })
}

func (h *harness) tagged(ino uint64, job string, class qos.Class) capability.Token {
	tok := capability.Token{Ino: ino, Gen: 1, Ops: capability.OpRead | capability.OpWrite,
		Expiry: time.Now().Add(time.Hour).UnixNano(), Job: job, Class: uint8(class)}
	tok.Sign(h.secret)
	return tok
}

func newQoSWorkload(h *harness) *qosWorkload {
	return &qosWorkload{h: h, cancel: map[string]context.CancelFunc{}, running: map[string]bool{}, errs: make(chan error, 16)}
}

// start runs qosWorkers clients for job, each sending its next request as
// soon as the last is answered: drains (and stages) write, io reads.
func (w *qosWorkload) start(job string, class qos.Class, ino uint64) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel[job] = cancel
	w.running[job] = true
	id := rpc.ComponentID{Ino: ino, Gen: 1}
	tok := w.h.tagged(ino, job, class)
	buf := make([]byte, qosChunk)
	for k := range qosWorkers {
		w.wg.Go(func() {
			out := make([]byte, qosChunk)
			for i := k; ctx.Err() == nil; i += qosWorkers {
				off := uint64(i%32) * qosChunk
				var err error
				if class == qos.ClassIO {
					var resp rpc.DSResp
					_, err = w.h.c.CallData(ctx, w.h.s.Addr(), rpc.DRead, &rpc.DSReq{Cap: tok, ID: id, Off: off, Len: qosChunk}, nil, &resp, out)
				} else {
					var resp rpc.DSResp
					req := rpc.DSReq{Cap: tok, ID: id, Off: off, Sums: rpc.AppendSums(nil, off, buf)}
					_, err = w.h.c.CallData(ctx, w.h.s.Addr(), rpc.DWrite, &req, buf, &resp, nil)
				}
				if err != nil && ctx.Err() == nil {
					w.errs <- err
					return
				}
			}
		})
	}
}

func (w *qosWorkload) stop(job string) {
	w.cancel[job]()
	delete(w.running, job)
}

func (w *qosWorkload) close() {
	for _, c := range w.cancel {
		c()
	}
	w.wg.Wait()
}

// served returns the bytes the scheduler served of each job.
func served(s *Server) map[string]int64 {
	m := map[string]int64{}
	for _, j := range s.QoSStats().Jobs {
		m[j.Job] += j.Served
	}
	return m
}

// measure returns each job's rate (bytes a second) over qosWindow.
func (w *qosWorkload) measure(t *testing.T) map[string]float64 {
	t.Helper()
	return w.measureOver(t, qosWindow)
}

// measureOver returns each job's rate (bytes a second) over window.
func (w *qosWorkload) measureOver(t *testing.T, window time.Duration) map[string]float64 {
	t.Helper()
	time.Sleep(qosSettle) // let the queues settle after a change
	a, t0 := served(w.h.s), time.Now()
	time.Sleep(window)
	b, t1 := served(w.h.s), time.Now()
	select {
	case err := <-w.errs:
		t.Fatalf("a client failed: %v", err)
	default:
	}
	rates := map[string]float64{}
	for job, n := range b {
		rates[job] = float64(n-a[job]) / t1.Sub(t0).Seconds()
	}
	// A job the server did not count (no scheduler, or a scheduler that
	// starves it) fails here rather than as a 0/0 ratio that compares false.
	for job := range w.running {
		if rates[job] <= 0 {
			t.Fatalf("the data server served job %q nothing over %v (served %v)", job, window, b)
		}
	}
	return rates
}

// measureUntil measures over window up to tries times and returns the
// first rates that ok accepts, else the last. What a scheduler guarantees
// a job that keeps asking (its limit, its reservation, the whole idle
// server) shows in a window where the loaded machine let the clients keep
// asking; a scheduler that breaks the guarantee fails every window.
func (w *qosWorkload) measureUntil(t *testing.T, window time.Duration, tries int, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	var rates map[string]float64
	for i := 0; i < tries; i++ {
		if rates = w.measureOver(t, window); ok(rates) {
			return rates
		}
		t.Logf("window %d of %d missed: %v", i+1, tries, rates)
	}
	return rates
}

// TestQoSIsolation: a reader keeps its throughput while two drains run,
// the drains share the rest by their weights, and once the reader stops
// the drains take the whole server. Each guarantee is measured over up to
// three windows (measureUntil): at load 24 a window in which the loaded
// machine stalled the drains' clients gave them 63% of one drain alone.
func TestQoSIsolation(t *testing.T) {
	h := newQoSHarness(t)
	p := qos.DefaultPolicy()
	p.Classes["io"] = qos.ClassPolicy{Weight: 4}
	p.Classes["drain"] = qos.ClassPolicy{Weight: 1}
	// The reader asks for half the server: its limit, so that the
	// scheduler, not a client that a loaded machine may stall, paces it.
	p.Jobs = map[string]qos.JobPolicy{"101": {Weight: 2}, "102": {Weight: 1}, "200": {Limit: qosBandwidth / 2}}
	h.s.SetQoSPolicy(p)
	for ino := uint64(1); ino <= 3; ino++ {
		h.mustWrite(rpc.ComponentID{Ino: ino, Gen: 1}, 0, make([]byte, 32*qosChunk))
	}
	w := newQoSWorkload(h)
	defer w.close()

	w.start("200", qos.ClassIO, 1)
	solo := w.measure(t)["200"]
	w.stop("200")

	w.start("101", qos.ClassDrain, 2)
	oneDrain := w.measure(t)["101"]

	w.start("102", qos.ClassDrain, 3)
	w.start("200", qos.ClassIO, 1)
	isolated := func(m map[string]float64) bool {
		return m["200"]/solo >= 0.8 && math.Abs(m["101"]/m["102"]/2-1) <= 0.1
	}
	mixed := w.measureUntil(t, qosWindow, 3, isolated)
	w.stop("200")
	after := w.measureUntil(t, qosWindow, 3, func(m map[string]float64) bool { return (m["101"]+m["102"])/oneDrain >= 0.9 })
	t.Logf("reader solo %.2f MiB/s, with drains %.2f; drains %.2f:%.2f; one drain alone %.2f, two after the reader %.2f+%.2f",
		solo/(1<<20), mixed["200"]/(1<<20), mixed["101"]/(1<<20), mixed["102"]/(1<<20),
		oneDrain/(1<<20), after["101"]/(1<<20), after["102"]/(1<<20))

	if r := mixed["200"] / solo; r < 0.8 {
		t.Errorf("the reader kept %.0f%% of its solo throughput under two drains, want >= 80%%", 100*r)
	}
	if e := math.Abs(mixed["101"]/mixed["102"]/2 - 1); e > 0.1 {
		t.Errorf("drains weighted 2:1 got %.2f:1, an error of %.0f%%, want <= 10%%", mixed["101"]/mixed["102"], 100*e)
	}
	if r := (after["101"] + after["102"]) / oneDrain; r < 0.9 {
		t.Errorf("two drains without the reader got %.0f%% of one drain alone, want >= 90%%", 100*r)
	}
}

// TestQoSJobLimit: a job with a limit gets that rate, within 10% over
// 10 s, on a server where an unlimited job takes the rest.
func TestQoSJobLimit(t *testing.T) {
	h := newQoSHarness(t)
	const limit = qosBandwidth / 2
	p := qos.DefaultPolicy()
	p.Jobs = map[string]qos.JobPolicy{"300": {Limit: limit}}
	h.s.SetQoSPolicy(p)
	w := newQoSWorkload(h)
	defer w.close()
	h.mustWrite(rpc.ComponentID{Ino: 1, Gen: 1}, 0, make([]byte, 32*qosChunk))
	// The limited job reads (class io, whose share is far above the
	// limit); a drain without a limit takes the rest of the server.
	w.start("300", qos.ClassIO, 1)
	w.start("301", qos.ClassDrain, 2)
	within := func(r map[string]float64) bool { return math.Abs(r["300"]/limit-1) <= 0.1 }
	got := w.measureUntil(t, qosLimitWindow, 3, within)
	t.Logf("over %v: limited job %.3f MiB/s (limit %.2f), unlimited %.3f", qosLimitWindow, got["300"]/(1<<20), float64(limit)/(1<<20), got["301"]/(1<<20))
	if !within(got) {
		e := math.Abs(got["300"]/limit - 1)
		t.Errorf("job limited to %d B/s got %.0f B/s, an error of %.0f%% over %v, want <= 10%%", limit, got["300"], 100*e, qosLimitWindow)
	}
}

// TestQoSForgedTag: a client that changes the tag of its capability, to
// another job's id or another class, is refused.
func TestQoSForgedTag(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 7, Gen: 1}
	tok := h.tagged(7, "400", qos.ClassIO)
	if _, err := h.writeTok(tok, id, 0, []byte("mine")); err != nil {
		t.Fatalf("write with the granted tag: %v", err)
	}
	for _, forge := range []func(*capability.Token){
		func(t *capability.Token) { t.Job = "401" },
		func(t *capability.Token) { t.Class = uint8(qos.ClassRebuild) },
	} {
		f := tok
		forge(&f)
		_, err := h.writeTok(f, id, 0, []byte("theirs"))
		var re *rpc.Error
		if !errors.As(err, &re) || re.Errno != uint32(syscall.EACCES) || !strings.Contains(err.Error(), "bad signature") {
			t.Fatalf("write with a forged tag %q/%d: %v, want EACCES bad signature", f.Job, f.Class, err)
		}
		if _, err := h.readInto(f, id, 0, make([]byte, 4)); err == nil {
			t.Fatalf("read with a forged tag %q/%d was served", f.Job, f.Class)
		}
	}
	if got := string(h.mustRead(id, 0, 16)); got != "mine" {
		t.Fatalf("component holds %q after the forged writes, want %q", got, "mine")
	}
}

// TestQoSRebuildReservation: a rebuild under full io load advances at no
// less than its reservation, and takes the whole server when io stops.
func TestQoSRebuildReservation(t *testing.T) {
	h := newQoSHarness(t)
	const resv = qosBandwidth / 4
	p := qos.DefaultPolicy()
	p.Classes["io"] = qos.ClassPolicy{Weight: 100}
	p.Classes["rebuild"] = qos.ClassPolicy{Weight: 1, Reservation: resv}
	h.s.SetQoSPolicy(p)
	h.mustWrite(rpc.ComponentID{Ino: 1, Gen: 1}, 0, make([]byte, 32*qosChunk))
	w := newQoSWorkload(h)
	defer w.close()
	w.start("500", qos.ClassIO, 1)
	w.start("", qos.ClassRebuild, 2)
	loaded := w.measureUntil(t, qosWindow, 3, func(r map[string]float64) bool { return r[""] >= 0.9*resv })
	w.stop("500")
	idle := w.measureUntil(t, qosWindow, 3, func(r map[string]float64) bool { return r[""] >= 0.9*qosBandwidth })
	t.Logf("rebuild under io load %.2f MiB/s (reservation %.2f, io %.2f); alone %.2f of %.2f",
		loaded[""]/(1<<20), float64(resv)/(1<<20), loaded["500"]/(1<<20), idle[""]/(1<<20), float64(qosBandwidth)/(1<<20))
	if loaded[""] < 0.9*resv {
		t.Errorf("rebuild under full io load got %.0f B/s, want at least its reservation %d", loaded[""], resv)
	}
	if idle[""] < 0.9*qosBandwidth {
		t.Errorf("rebuild alone got %.0f B/s, want the whole server (%d)", idle[""], qosBandwidth)
	}
}
