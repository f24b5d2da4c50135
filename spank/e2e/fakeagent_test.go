package e2e

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-hpc/strata/jobtier"
)

// fakeAgent stands in for `strata agent` on every node: it listens on each
// node's root-only socket, records the requests, and answers as the
// contract in docs/slurm.md says a real agent would, minus the file
// system: a prolog whose POSIX stage-in source is missing is a user error,
// after which status says the tier is not usable; otherwise the tier is a
// plain directory under base. Nodes in down have no agent at all.
type fakeAgent struct {
	base string
	lns  []net.Listener
	wg   sync.WaitGroup

	mu      sync.Mutex
	reqs    []jobtier.HookRequest
	failed  map[uint32]string // job -> user error of its prolog
	romio   bool
	changed chan struct{}
}

func startFakeAgent(t *testing.T, pattern string, nodes []string, base string) *fakeAgent {
	t.Helper()
	a := &fakeAgent{base: base, failed: map[uint32]string{}, changed: make(chan struct{}, 1)}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		p := strings.ReplaceAll(pattern, "%n", n)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		// Root-only, as the real agent's: a plugin that called from the
		// job user's identity would be refused.
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		a.lns = append(a.lns, ln)
		a.wg.Add(1)
		go a.serve(ln)
	}
	t.Cleanup(a.close)
	return a
}

func (a *fakeAgent) close() {
	for _, ln := range a.lns {
		ln.Close()
	}
	a.wg.Wait()
}

func (a *fakeAgent) serve(ln net.Listener) {
	defer a.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			q, err := jobtier.ReadHookRequest(bufio.NewReader(c))
			if err != nil {
				jobtier.WriteHookLine(c, jobtier.HookReply{Error: err.Error()})
				return
			}
			jobtier.WriteHookLine(c, a.handle(q))
		}()
	}
}

// handle answers one request: a jobtier.HookReply, or a map when the reply
// carries fields the plugin does not know (it must skip them).
func (a *fakeAgent) handle(q jobtier.HookRequest) any {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, q)
	select {
	case a.changed <- struct{}{}:
	default:
	}
	dir := filepath.Join(a.base, strconv.FormatUint(uint64(q.JobID), 10), q.Node)
	switch q.Op {
	case jobtier.OpProlog:
		spec, err := jobtier.Parse(q.Spec)
		if err != nil {
			return jobtier.HookReply{Error: err.Error(), UserError: true}
		}
		for _, in := range spec.StageIn {
			if _, err := os.Stat(in.Src.Path); !in.Src.Strata && err != nil {
				msg := "stage-in source " + in.Src.Path + ": no such file or directory"
				a.failed[q.JobID] = msg
				return jobtier.HookReply{Error: msg, UserError: true}
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return jobtier.HookReply{Error: err.Error()}
		}
		if err := os.Chown(dir, int(q.UID), int(q.GID)); err != nil {
			return jobtier.HookReply{Error: err.Error()}
		}
		return jobtier.HookReply{OK: true}
	case jobtier.OpEpilog:
		if err := os.RemoveAll(dir); err != nil {
			return jobtier.HookReply{Error: err.Error()}
		}
		return jobtier.HookReply{OK: true}
	default: // status
		if msg, ok := a.failed[q.JobID]; ok {
			return map[string]any{
				"future": map[string]any{"phase": "stage-in", "files": []any{1, "two", nil, true, map[string]any{}}},
				"ok":     false, "note": "caf\u00e9 \"quoted\"\n", "error": msg, "user_error": true, "tier_dir": nil,
			}
		}
		if _, err := os.Stat(dir); err != nil {
			return jobtier.HookReply{Error: "no tier for job " + strconv.FormatUint(uint64(q.JobID), 10) + " on " + q.Node}
		}
		r := jobtier.HookReply{OK: true, TierDir: dir}
		if a.romio {
			r.ROMIOHints = filepath.Join(dir, ".romio-hints")
		}
		return r
	}
}

// requests returns the requests received so far for job, in order.
func (a *fakeAgent) requests(job uint32) []jobtier.HookRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []jobtier.HookRequest
	for _, q := range a.reqs {
		if q.JobID == job {
			out = append(out, q)
		}
	}
	return out
}

// byOp returns the nodes that sent op for job, sorted as received.
func byOp(reqs []jobtier.HookRequest, op jobtier.HookOp) []jobtier.HookRequest {
	var out []jobtier.HookRequest
	for _, q := range reqs {
		if q.Op == op {
			out = append(out, q)
		}
	}
	return out
}
