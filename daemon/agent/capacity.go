package agent

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Capacity: a tier's data server may fill its capacity, so a node gives a
// new tier only what its NVMe file system has free and has not promised
// to the tiers already there (each one's capacity less what it already
// stores, which is no longer free). A spec that does not fit fails the job
// with the figures, never the node, and the other nodes of the job stop
// waiting for this one (failedXattr).

// reserveCapacity checks that want bytes (0: all that is left) fit on
// this node's NVMe next to the other tiers, reserves them for t and
// returns the capacity to give t's data server.
func (s *Server) reserveCapacity(t *tier, want uint64) (uint64, error) {
	s.capMu.Lock()
	defer s.capMu.Unlock()
	var sf unix.Statfs_t
	if err := unix.Statfs(s.cfg.NVMeDir, &sf); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", s.cfg.NVMeDir, err)
	}
	free := sf.Bavail * uint64(sf.Bsize)
	type other struct {
		job      uint32
		capacity uint64
		data     string
	}
	var others []other
	s.mu.Lock()
	for job, o := range s.tiers {
		if o == t || !o.reserved {
			continue
		}
		o.smu.Lock()
		if o.st.Phase != phaseFailed {
			others = append(others, other{job, o.st.Capacity, o.data})
		}
		o.smu.Unlock()
	}
	s.mu.Unlock()
	var promised uint64
	var jobs []uint32
	for _, o := range others {
		if used := diskUsage(o.data); o.capacity > used {
			promised += o.capacity - used
		}
		jobs = append(jobs, o.job)
	}
	slices.Sort(jobs)
	avail := uint64(0)
	if free > promised {
		avail = free - promised
	}
	if want == 0 {
		want = avail
	}
	if want == 0 || want > avail {
		held := ""
		if len(jobs) > 0 {
			held = fmt.Sprintf(", %s of it promised to the tiers of jobs %v already there", humanBytes(promised), jobs)
		}
		return 0, jobErrorf("storage tier: capacity %s per node does not fit on node %s: its NVMe has %s free%s; ask for at most %s per node (capacity=SIZE)",
			humanBytes(want), s.cfg.Node, humanBytes(free), held, humanBytes(avail))
	}
	t.reserved = true
	return want, nil
}

// diskUsage is the bytes the files under dir take on disk.
func diskUsage(dir string) uint64 {
	var n uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*unix.Stat_t); ok {
				n += uint64(st.Blocks) * 512
			}
		}
		return nil
	})
	return n
}

// humanBytes formats n for a message: 1000T, 287.5M, 512.
func humanBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + units[u:u+1]
}

// failEarly tells the job's other nodes that this node's part of the tier
// failed before its data server started (they would otherwise wait for it
// for ReadyTimeout): once the tier's MDS answers, it marks the tier
// failed. Best effort, bounded by ReadyTimeout.
func (s *Server) failEarly(ctx context.Context, t *tier, reason string) {
	tc, err := t.adminClient(time.Second)
	if err != nil {
		return
	}
	defer tc.Close()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	_ = poll(rctx, 50*time.Millisecond, func() (bool, error) {
		cctx, cancel := context.WithTimeout(rctx, time.Second)
		defer cancel()
		c, err := tc.Cluster(cctx)
		return err == nil && c.Role == "leader", nil
	})
	s.markFailed(t, reason)
}

// failedMark returns the job error of a tier a node marked failed
// (failedXattr on its root), or nil.
func failedMark(ctx context.Context, tc *client.Client) error {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if v, err := tc.GetXattrIno(cctx, rpc.RootIno, failedXattr); err == nil {
		return &jobError{msg: string(v)}
	}
	return nil
}
