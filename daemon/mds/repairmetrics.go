package mds

import (
	"bufio"
	"fmt"
	"sync/atomic"

	"github.com/strata-hpc/strata/layout"
)

// repairMetrics counts what failure handling did since this server started.
type repairMetrics struct {
	stale          atomic.Uint64 // components marked stale by LAYOUTERROR
	rebuilt        atomic.Uint64 // components rebuilt and swapped in
	rebuildBytes   atomic.Uint64 // bytes the rebuilds wrote
	rebuildYields  atomic.Uint64 // pauses for foreground load
	scrubBad       atomic.Uint64 // corrupt blocks reported by scrub
	repairedBlocks atomic.Uint64 // corrupt blocks rewritten from redundancy
}

// DataBytes returns the file data bytes this server's process has sent to
// or received from data servers (rpc.Client.DataBytes of every client it
// calls them with). Rebuilds move data from data server to data server
// (daemon/ds rebuild.go): the leader carries none.
func (s *Server) DataBytes() uint64 { return s.dsc.DataBytes() + s.rb.dsc.DataBytes() }

// writeRepairMetrics writes the failure-handling metrics: counters since
// start, and from the FSM the stale components, draining data servers,
// strays and unrecoverable blocks, and from the rebuild manager its queue.
func (s *Server) writeRepairMetrics(bw *bufio.Writer, family func(name, typ, help string)) {
	family("strata_mds_layouterror_stale_total", "counter", "Components marked stale after a failed client call (LAYOUTERROR).")
	fmt.Fprintf(bw, "strata_mds_layouterror_stale_total %d\n", s.rmet.stale.Load())
	family("strata_mds_rebuilt_components_total", "counter", "Components rebuilt or moved and swapped into their layout.")
	fmt.Fprintf(bw, "strata_mds_rebuilt_components_total %d\n", s.rmet.rebuilt.Load())
	family("strata_mds_rebuild_bytes_total", "counter", "Bytes written by rebuilds.")
	fmt.Fprintf(bw, "strata_mds_rebuild_bytes_total %d\n", s.rmet.rebuildBytes.Load())
	family("strata_mds_data_bytes_total", "counter", "File data bytes this MDS process sent to or received from data servers: rebuilds, drains, moves and block repairs go data server to data server, so none.")
	fmt.Fprintf(bw, "strata_mds_data_bytes_total %d\n", s.DataBytes())
	family("strata_mds_rebuild_yields_total", "counter", "Times a rebuild paused for foreground load.")
	fmt.Fprintf(bw, "strata_mds_rebuild_yields_total %d\n", s.rmet.rebuildYields.Load())
	family("strata_mds_scrub_bad_blocks_total", "counter", "Blocks failing their checksum reported by data server scrubs.")
	fmt.Fprintf(bw, "strata_mds_scrub_bad_blocks_total %d\n", s.rmet.scrubBad.Load())
	family("strata_mds_repaired_blocks_total", "counter", "Corrupt blocks rewritten from redundancy.")
	fmt.Fprintf(bw, "strata_mds_repaired_blocks_total %d\n", s.rmet.repairedBlocks.Load())

	s.fsm.mu.RLock()
	var stale, lostComps, lostBlocks, damagedBlocks int
	for _, e := range s.fsm.st.rep.stale {
		stale += len(e.Comps)
	}
	for _, d := range s.fsm.st.rep.damaged {
		damagedBlocks += len(d.Blocks)
		if n := s.fsm.st.get(d.Ino); n != nil && n.isFile() && n.Layout.Scheme.Kind == layout.KindNone {
			lostComps++
			lostBlocks += len(d.Blocks)
		}
	}
	draining, strays := len(s.fsm.st.rep.draining), len(s.fsm.st.rep.strays)
	s.fsm.mu.RUnlock()
	family("strata_mds_stale_components", "gauge", "Components marked stale, waiting to be rebuilt.")
	fmt.Fprintf(bw, "strata_mds_stale_components %d\n", stale)
	family("strata_mds_draining_ds", "gauge", "Data servers being drained.")
	fmt.Fprintf(bw, "strata_mds_draining_ds %d\n", draining)
	family("strata_mds_stray_components", "gauge", "Displaced components waiting to be removed from their data servers.")
	fmt.Fprintf(bw, "strata_mds_stray_components %d\n", strays)
	family("strata_mds_damaged_blocks", "gauge", "Blocks failing their checksum found by scrub, not repaired yet.")
	fmt.Fprintf(bw, "strata_mds_damaged_blocks %d\n", damagedBlocks)
	family("strata_mds_unrecoverable_components", "gauge", "Components of files without redundancy in which scrub found corrupt blocks.")
	fmt.Fprintf(bw, "strata_mds_unrecoverable_components %d\n", lostComps)
	family("strata_mds_unrecoverable_blocks", "gauge", "Corrupt blocks of files without redundancy: nothing to repair them from.")
	fmt.Fprintf(bw, "strata_mds_unrecoverable_blocks %d\n", lostBlocks)

	s.rb.mu.Lock()
	counts := map[string]int{"queued": 0, "running": 0, "waiting": 0, "blocked": 0}
	for _, t := range s.rb.tasks {
		counts[t.state]++
	}
	s.rb.mu.Unlock()
	family("strata_mds_rebuild_tasks", "gauge", "Components the rebuild manager of this node has to rebuild, by state.")
	for _, st := range []string{"queued", "running", "waiting", "blocked"} {
		fmt.Fprintf(bw, "strata_mds_rebuild_tasks{state=%q} %d\n", st, counts[st])
	}
}
