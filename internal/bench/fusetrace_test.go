package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/client/fuse"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// fuseTrace records the FUSE requests a mount serves (go-fuse's debug
// lines, "rx <id>: <OP> ..." as a request arrives and "tx <id>: ..." as
// its reply is written) and how long the mount took over each, by
// operation.
type fuseTrace struct {
	mu    sync.Mutex
	on    bool
	start map[uint64]fuseReq // requests not answered yet
	ops   map[string]*opTime
}

type fuseReq struct {
	op string
	at time.Time
}

// opTime is the count and the total time of one kind of request.
type opTime struct {
	n int
	d time.Duration
}

func newFuseTrace() *fuseTrace {
	return &fuseTrace{start: map[uint64]fuseReq{}, ops: map[string]*opTime{}}
}

// Enabled, Handle, WithAttrs and WithGroup make the trace a slog.Handler
// for the mount's log: it takes go-fuse's debug lines and drops the rest.
func (t *fuseTrace) Enabled(context.Context, slog.Level) bool { return true }
func (t *fuseTrace) WithAttrs([]slog.Attr) slog.Handler       { return t }
func (t *fuseTrace) WithGroup(string) slog.Handler            { return t }

func (t *fuseTrace) Handle(_ context.Context, r slog.Record) error {
	now := time.Now()
	kind, rest, ok := strings.Cut(r.Message, " ")
	if !ok || (kind != "rx" && kind != "tx") {
		return nil
	}
	idText, rest, ok := strings.Cut(rest, ": ")
	id, err := strconv.ParseUint(idText, 10, 64)
	if !ok || err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return nil
	}
	if kind == "rx" {
		op, _, _ := strings.Cut(rest, " ")
		t.start[id] = fuseReq{op: op, at: now}
		return nil
	}
	q, ok := t.start[id]
	if !ok {
		return nil
	}
	delete(t.start, id)
	o := t.ops[q.op]
	if o == nil {
		o = &opTime{}
		t.ops[q.op] = o
	}
	o.n++
	o.d += now.Sub(q.at)
	return nil
}

// run traces fn and returns the requests it made, by operation.
func (t *fuseTrace) run(fn func()) map[string]opTime {
	t.mu.Lock()
	t.on, t.ops, t.start = true, map[string]*opTime{}, map[uint64]fuseReq{}
	t.mu.Unlock()
	fn()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	out := make(map[string]opTime, len(t.ops))
	for op, o := range t.ops {
		out[op] = *o
	}
	return out
}

// raftApplied returns the MDS leader's applied raft index.
func raftApplied(b *testing.B, cl *testcluster.Cluster) uint64 {
	var buf bytes.Buffer
	if err := cl.MDS().WriteMetrics(&buf); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "strata_mds_raft_applied_index "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatalf("metrics line %q", sc.Text())
			}
			return n
		}
	}
	b.Fatal("no strata_mds_raft_applied_index in the MDS's metrics")
	return 0
}

// smallFileTrace mounts cl again with go-fuse's request log on and has
// one process write n small files (create, write 4 KiB, close) and, once
// the kernel's caches expired, read them back (open, read, close). It
// prints, per file and phase, the requests the kernel sent with the
// mount's mean time over each, the MDS calls by name, and the raft
// entries the MDS applied (the whole cluster's: the cluster's own entries
// are counted too).
func smallFileTrace(b *testing.B, cl *testcluster.Cluster, n int, wait time.Duration) {
	tr := newFuseTrace()
	opts := fuse.DefaultOptions()
	opts.Debug = true
	opts.Log = slog.New(tr)
	m, err := fuse.Mount(context.Background(), cl.Client(), b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer unmountStrata(b, m)
	root := filepath.Join(m.Dir(), "trace")
	dirs, err := procDirs(root, 1)
	if err != nil {
		b.Fatal(err)
	}
	for i, phase := range []string{"write", "reread"} {
		if i > 0 {
			time.Sleep(wait)
		}
		ops, raft := cl.MDSOps(), raftApplied(b, cl)
		var rate float64
		var cpu time.Duration
		reqs := tr.run(func() {
			if rate, cpu, err = runMetaPhase(phase, dirs, n); err != nil {
				b.Fatalf("trace %s: %v", phase, err)
			}
		})
		raft = raftApplied(b, cl) - raft
		after := cl.MDSOps()
		fmt.Printf("  %s, one process, %d files: %.3f ms per file (the file system's side's CPU %.3f ms), %.2f raft entries per file\n", phase, n, 1000/rate, ms(cpu), float64(raft)/float64(n))
		names := make([]string, 0, len(reqs))
		for op := range reqs {
			names = append(names, op)
		}
		sort.Slice(names, func(i, j int) bool { return reqs[names[i]].d > reqs[names[j]].d })
		for _, op := range names {
			o := reqs[op]
			fmt.Printf("    FUSE %-12s %5.2f per file, %7.3f ms each, %7.3f ms per file\n", op, float64(o.n)/float64(n), ms(o.d)/float64(o.n), ms(o.d)/float64(n))
		}
		var calls []string
		for op, c := range after {
			switch op {
			case "heartbeat", "session.renew", "auth.session", "cluster", "statfs":
				continue
			}
			if d := c - ops[op]; d > 0 {
				calls = append(calls, fmt.Sprintf("%s %.2f", op, float64(d)/float64(n)))
			}
		}
		sort.Strings(calls)
		fmt.Printf("    MDS calls per file: %s\n", strings.Join(calls, ", "))
	}
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
}
