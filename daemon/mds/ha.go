package mds

import (
	"context"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// High availability: several MDS replicas form one raft group. Only the
// leader serves clients: every call but cluster is answered by a follower
// with EAGAIN and, when it knows it, the leader's RPC address in
// rpc.Error.Redirect; clients retry there. The leader records its RPC
// address in the FSM (mdsAddrCmd) each time it takes office, so every
// replica can redirect. Soft state (data server liveness, lock leases) is
// the leader's; a new leader grants everyone one timeout of grace.

// mdsAddrCmd records the RPC address of an MDS replica.
type mdsAddrCmd struct {
	ID  string
	RPC string
}

func (st *state) applyMDSAddr(c *mdsAddrCmd) result {
	st.mds[c.ID] = c.RPC
	return result{}
}

// rpcAddr is the address clients reach this node at.
func (s *Server) rpcAddr() string {
	if s.cfg.Advertise != "" {
		return s.cfg.Advertise
	}
	return s.Addr()
}

// notLeader is the answer of a follower: EAGAIN with the leader's address.
func (s *Server) notLeader() error {
	r := s.raft()
	var leader raft.ServerID
	if r != nil {
		_, leader = r.LeaderWithID()
	}
	s.fsm.mu.RLock()
	addr := s.fsm.st.mds[string(leader)]
	s.fsm.mu.RUnlock()
	msg := "mds: not the leader"
	if leader == "" {
		msg += "; no leader elected yet"
	} else {
		msg += fmt.Sprintf("; the leader is %s", leader)
	}
	return &rpc.Error{Errno: uint32(syscall.EAGAIN), Msg: msg, Redirect: addr, NotLeader: true}
}

// isLeader reports whether this node leads now and has taken office in
// this term: until takeOffice is done its registry and leases are not yet
// the leader's (a create would find no data server up), so it answers as a
// follower and clients retry.
func (s *Server) isLeader() bool {
	r := s.raft()
	return r != nil && r.State() == raft.Leader && s.office.Load() == r.CurrentTerm()
}

// watchLeader follows this node's raft role. It closes ready once a leader
// is known (and, on the leader, its log is applied), and each time this node
// takes office it runs takeOffice.
func (s *Server) watchLeader(ctx context.Context) {
	defer s.wg.Done()
	r := s.node.raft
	leaderCh := r.LeaderCh()
	tick := time.NewTicker(max(s.cfg.RaftTimeout/5, 10*time.Millisecond))
	defer tick.Stop()
	readyOnce := false
	markReady := func() {
		if !readyOnce {
			readyOnce = true
			s.log.Info("mds_ready", "role", roleOf(r.State()), "term", r.CurrentTerm(), "applied_index", r.AppliedIndex())
			close(s.ready)
		}
	}
	term := uint64(0) // the term this node last took office in
	for {
		if r.State() == raft.Leader && r.CurrentTerm() != term {
			if err := s.takeOffice(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("mds_take_office_failed", "err", err)
			} else {
				term = r.CurrentTerm()
				s.office.Store(term)
				markReady()
			}
		} else if addr, _ := r.LeaderWithID(); addr != "" && r.State() != raft.Leader {
			markReady()
		}
		select {
		case <-ctx.Done():
			return
		case <-leaderCh:
		case <-tick.C:
		}
	}
}

// takeOffice runs when this node becomes the leader: a barrier so the FSM
// holds every committed entry, the root's times stamped after bootstrap,
// this node's RPC address recorded for redirects, and grace for the soft
// state of data servers and lock sessions.
func (s *Server) takeOffice(ctx context.Context) error {
	r := s.node.raft
	if err := awaitFuture(ctx, r.Barrier(0)); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	s.fsm.mu.RLock()
	fresh := s.fsm.st.get(rpc.RootIno).Ctime == 0
	known := s.fsm.st.mds[s.cfg.ID]
	s.fsm.mu.RUnlock()
	if fresh {
		if _, err := s.apply(cmdInit, &initCmd{Now: s.now()}); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if addr := s.rpcAddr(); known != addr {
		if _, err := s.apply(cmdMDSAddr, &mdsAddrCmd{ID: s.cfg.ID, RPC: addr}); err != nil {
			return fmt.Errorf("record rpc address: %w", err)
		}
	}
	s.leases.takeOffice()
	s.fsm.mu.RLock()
	records := make(map[string]dsRecord, len(s.fsm.st.ds))
	for id, d := range s.fsm.st.ds {
		records[id] = d
	}
	s.fsm.mu.RUnlock()
	s.reg.takeOffice(records)
	s.log.Info("mds_took_office", "term", r.CurrentTerm(), "rpc_addr", s.rpcAddr())
	return ctx.Err()
}

// voters returns the raft configuration with each replica's RPC address.
func (s *Server) voters() ([]rpc.MDSInfo, error) {
	r := s.raft()
	if r == nil {
		return nil, ErrClosed
	}
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	var out []rpc.MDSInfo
	for _, srv := range f.Configuration().Servers {
		out = append(out, rpc.MDSInfo{
			ID:       string(srv.ID),
			RaftAddr: string(srv.Address),
			RPCAddr:  s.fsm.st.mds[string(srv.ID)],
			Voter:    srv.Suffrage == raft.Voter,
		})
	}
	return out, nil
}

// addVoter adds a replica to the raft group (leader only).
func (s *Server) addVoter(_ context.Context, r *rpc.VoterReq) (*rpc.ClusterResp, error) {
	if r.ID == "" || r.RaftAddr == "" {
		return nil, errf(syscall.EINVAL, "add voter: an id and a raft address are required")
	}
	if !r.Force {
		// A voter that cannot be reached would count toward the quorum
		// at once: with two voters, one down, the group could never
		// commit again.
		if err := probeRaft(r.RaftAddr); err != nil {
			return nil, errf(syscall.EHOSTUNREACH, "add voter %s: nothing answers at raft address %s (%v); start it with --join first, or force", r.ID, r.RaftAddr, err)
		}
	}
	if err := s.node.raft.AddVoter(raft.ServerID(r.ID), raft.ServerAddress(r.RaftAddr), 0, 30*time.Second).Error(); err != nil {
		if lostOffice(err) {
			return nil, raftError(err)
		}
		return nil, errf(syscall.EIO, "add voter %s at %s: %v", r.ID, r.RaftAddr, err)
	}
	s.log.Info("mds_voter_added", "voter", r.ID, "raft_addr", r.RaftAddr)
	return s.Cluster(context.Background())
}

// removeVoter removes a replica (leader only); the last voter stays.
func (s *Server) removeVoter(_ context.Context, r *rpc.VoterReq) (*rpc.ClusterResp, error) {
	vs, err := s.voters()
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(vs, func(v rpc.MDSInfo) bool { return v.ID == r.ID }) {
		return nil, errf(syscall.ENOENT, "remove voter: %q is not in the raft configuration", r.ID)
	}
	voters := 0
	for _, v := range vs {
		if v.Voter {
			voters++
		}
	}
	if voters <= 1 {
		return nil, errf(syscall.EBUSY, "remove voter %s: it is the last voter; the namespace would have no metadata server", r.ID)
	}
	if err := s.node.raft.RemoveServer(raft.ServerID(r.ID), 0, 30*time.Second).Error(); err != nil {
		if lostOffice(err) {
			return nil, raftError(err)
		}
		return nil, errf(syscall.EIO, "remove voter %s: %v", r.ID, err)
	}
	s.log.Info("mds_voter_removed", "voter", r.ID)
	return s.Cluster(context.Background())
}

// probeTimeout bounds the check that a new voter answers.
const probeTimeout = 5 * time.Second

// probeRaft checks that something accepts connections at a raft address.
func probeRaft(addr string) error {
	c, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	return c.Close()
}
