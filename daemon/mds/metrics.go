package mds

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// metrics counts the calls of each operation. The set of operations is
// fixed when the handlers are registered; the counters are atomic.
type metrics struct {
	ops []*opCounter
}

// opCounter counts one operation's calls and failures.
type opCounter struct {
	name   string
	total  atomic.Uint64
	errors atomic.Uint64
}

// op returns a new counter for operation name. Not safe for concurrent
// use: called while registering handlers.
func (m *metrics) op(name string) *opCounter {
	c := &opCounter{name: name}
	m.ops = append(m.ops, c)
	return c
}

// named returns the counter of operation name, nil if there is none.
func (m *metrics) named(name string) *opCounter {
	for _, c := range m.ops {
		if c.name == name {
			return c
		}
	}
	return nil
}

// WriteMetrics writes the server's metrics in the Prometheus text
// exposition format: operation counters, inode count, raft term, applied
// index and leadership, and per data server whether it is up, its
// capacity and its free space.
func (s *Server) WriteMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	family := func(name, typ, help string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("strata_mds_ops_total", "counter", "Metadata operations served, by operation.")
	for _, c := range s.met.ops {
		fmt.Fprintf(bw, "strata_mds_ops_total{op=%q} %d\n", c.name, c.total.Load())
	}
	family("strata_mds_op_errors_total", "counter", "Metadata operations that failed, by operation.")
	for _, c := range s.met.ops {
		fmt.Fprintf(bw, "strata_mds_op_errors_total{op=%q} %d\n", c.name, c.errors.Load())
	}

	s.fsm.mu.RLock()
	inodes, orphans := len(s.fsm.st.inodes), len(s.fsm.st.orphans)
	recs := slices.SortedFunc(maps.Values(s.fsm.st.ds), func(a, b dsRecord) int { return strings.Compare(a.ID, b.ID) })
	s.fsm.mu.RUnlock()
	family("strata_mds_inodes", "gauge", "Inodes in the namespace.")
	fmt.Fprintf(bw, "strata_mds_inodes %d\n", inodes)
	family("strata_mds_orphans", "gauge", "Removed layouts whose components wait to be deleted from data servers.")
	fmt.Fprintf(bw, "strata_mds_orphans %d\n", orphans)

	var term, applied uint64
	var leader int
	if r := s.raft(); r != nil {
		term, applied = r.CurrentTerm(), r.AppliedIndex()
		if r.State() == raft.Leader {
			leader = 1
		}
	}
	family("strata_mds_raft_term", "gauge", "Current raft term.")
	fmt.Fprintf(bw, "strata_mds_raft_term %d\n", term)
	family("strata_mds_raft_applied_index", "gauge", "Last raft log index applied to the state machine.")
	fmt.Fprintf(bw, "strata_mds_raft_applied_index %d\n", applied)
	family("strata_mds_is_leader", "gauge", "1 if this MDS is the raft leader.")
	fmt.Fprintf(bw, "strata_mds_is_leader %d\n", leader)

	now := s.clock()
	infos := make([]struct {
		id             string
		up             int
		capacity, free uint64
	}, len(recs))
	for i, rec := range recs {
		in := s.reg.info(rec, now)
		infos[i].id, infos[i].capacity, infos[i].free = rec.ID, in.Capacity, in.Free
		if in.State == "up" {
			infos[i].up = 1
		}
	}
	family("strata_ds_up", "gauge", "1 if the data server was heard from within the heartbeat timeout.")
	for _, in := range infos {
		fmt.Fprintf(bw, "strata_ds_up{ds=%s} %d\n", label(in.id), in.up)
	}
	family("strata_ds_capacity_bytes", "gauge", "Capacity of the data server, from its last heartbeat.")
	for _, in := range infos {
		fmt.Fprintf(bw, "strata_ds_capacity_bytes{ds=%s} %d\n", label(in.id), in.capacity)
	}
	family("strata_ds_free_bytes", "gauge", "Free space of the data server, from its last heartbeat.")
	for _, in := range infos {
		fmt.Fprintf(bw, "strata_ds_free_bytes{ds=%s} %d\n", label(in.id), in.free)
	}
	s.writeRepairMetrics(bw, family)
	s.writeQoSMetrics(bw, family)
	family("strata_mds_uptime_seconds", "gauge", "Seconds since the server started.")
	fmt.Fprintf(bw, "strata_mds_uptime_seconds %.0f\n", s.uptime(now).Seconds())
	return bw.Flush()
}

// label quotes a Prometheus label value: backslash, double quote and
// newline are escaped.
func label(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

func (s *Server) uptime(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startedAt.IsZero() {
		return 0
	}
	return now.Sub(s.startedAt)
}
