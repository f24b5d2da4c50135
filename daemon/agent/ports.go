package agent

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Tier MDS ports. A tier's MDS listens on the first node of the job, on a
// port pair of PortBase + 2*slot (RPC) and the next (raft). Its preferred
// slot is job % PortSlots; two jobs sharing a first node whose ids are
// equal modulo PortSlots would want the same pair, so the first node's
// agent takes the first of tierPortProbe slots from there that no tier of
// its own holds and that both ports are free on, and the other nodes find
// it by asking each of those slots for the MDS whose id is the job's
// (tier-JOBID), as it comes up.

// tierPortProbe is how many slots from the preferred one are tried.
const tierPortProbe = 16

// tierSlotPorts returns the RPC and raft ports of the k-th slot tried for
// job.
func (s *Server) tierSlotPorts(job uint32, k int) (int, int) {
	slots := s.cfg.PortSlots
	slot := (int(job%uint32(slots)) + k) % slots
	p := s.cfg.PortBase + 2*slot
	return p, p + 1
}

// probes is how many slots are tried: tierPortProbe, or fewer if the
// agent has fewer slots.
func (s *Server) probes() int { return min(tierPortProbe, s.cfg.PortSlots) }

// pickTierAddrs chooses the RPC and raft addresses, on host, of the MDS of
// tier t, which this node (its first) starts, and records them in t's
// state before another tier can choose.
func (s *Server) pickTierAddrs(t *tier, host string) error {
	s.portMu.Lock()
	defer s.portMu.Unlock()
	held := map[string]bool{}
	s.mu.Lock()
	for job, o := range s.tiers {
		if job != t.st.Job {
			o.smu.Lock()
			held[o.st.MDSAddr], held[o.st.RaftAddr] = true, true
			o.smu.Unlock()
		}
	}
	s.mu.Unlock()
	var tried []string
	for k := range s.probes() {
		rp, fp := s.tierSlotPorts(t.st.Job, k)
		ra, fa := net.JoinHostPort(host, strconv.Itoa(rp)), net.JoinHostPort(host, strconv.Itoa(fp))
		tried = append(tried, strconv.Itoa(rp))
		if held[ra] || held[fa] || !free(ra) || !free(fa) {
			continue
		}
		t.smu.Lock()
		t.st.MDSAddr, t.st.RaftAddr = ra, fa
		err := t.saveLocked()
		t.smu.Unlock()
		return err
	}
	return fmt.Errorf("no free port pair for the tier MDS on %s: tried RPC ports %v (and each next one); other tiers or programs hold them (agent port_base %d, port_slots %d)",
		host, tried, s.cfg.PortBase, s.cfg.PortSlots)
}

// free reports whether nothing listens on addr now.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// findTierAddrs waits until the MDS of tier t answers on one of its slots
// on host (the first node's address) and records its addresses in t's
// state: this node is not the first.
func (s *Server) findTierAddrs(ctx context.Context, t *tier, host string) error {
	want := tierMDSID(t.st.Job)
	c := rpc.NewClient(rpc.ClientConfig{Timeout: time.Second, MaxConnsPerHost: 1})
	defer c.Close()
	err := poll(ctx, 50*time.Millisecond, func() (bool, error) {
		for k := range s.probes() {
			rp, fp := s.tierSlotPorts(t.st.Job, k)
			addr := net.JoinHostPort(host, strconv.Itoa(rp))
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			var cl rpc.ClusterResp
			err := c.Call(cctx, addr, rpc.MCluster, &rpc.Empty{}, &cl)
			cancel()
			if err != nil || cl.ID != want {
				continue
			}
			t.smu.Lock()
			t.st.MDSAddr, t.st.RaftAddr = addr, net.JoinHostPort(host, strconv.Itoa(fp))
			err = t.saveLocked()
			t.smu.Unlock()
			return true, err
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		rp, _ := s.tierSlotPorts(t.st.Job, 0)
		return jobErrorf("the storage tier's MDS on %s (%s, port %d or one of the %d after it) did not answer within %v", t.st.Nodes[0], host, rp, s.probes()-1, s.cfg.ReadyTimeout)
	}
	return err
}

// tierMDSID is the raft id of job's tier MDS, which it reports in
// rpc.ClusterResp.ID.
func tierMDSID(job uint32) string { return "tier-" + strconv.FormatUint(uint64(job), 10) }
