package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/rpc"
	cred "github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/jobtier"
	"github.com/strata-hpc/strata/layout"
	"github.com/strata-hpc/strata/mpiio"
)

// tierXattr is set on a tier's root by the first node once the root
// belongs to the job's user: it holds tierMeta. The other nodes mount only
// after it exists, and `strata tier drain --wait` reads the drain rules
// from it.
const tierXattr = "user.strata.tier"

// epilogXattr is set on a tier's root by the first node when its final
// drain is over: the other nodes may stop their data servers.
const epilogXattr = "user.strata.epilog"

// tierMeta is the value of tierXattr.
type tierMeta struct {
	Job   uint32 `json:"job"`
	Spec  string `json:"spec"` // canonical
	Mount string `json:"mount"`
}

// Prolog assembles this node's part of the job's tier: its data server,
// on the first node also the tier's MDS, the mount, then this node's
// share of the stage-in. An error that is the job's (jobError) fails the
// job; any other is this node's.
func (s *Server) Prolog(ctx context.Context, req jobtier.HookRequest) error {
	spec, err := jobtier.Parse(req.Spec)
	if err == nil {
		err = s.cfg.Tier.Check(spec)
	}
	if err != nil {
		return &jobError{msg: err.Error()}
	}
	nodes, err := expandHostlist(req.Nodes)
	if err != nil {
		return jobErrorf("storage tier: %v", err)
	}
	idx := slices.Index(nodes, s.cfg.Node)
	if idx < 0 {
		return fmt.Errorf("node %s is not in the job's node list %s", s.cfg.Node, req.Nodes)
	}

	s.mu.Lock()
	t, known := s.tiers[req.JobID], true
	if t == nil {
		t, known = s.newTier(req.JobID), false
		s.tiers[req.JobID] = t
	}
	s.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if known {
		switch phase, reason := t.phase(); phase {
		case phaseRunning, phaseStaging:
			return nil // a repeated prolog (the stage-in goes on)
		case phaseFailed:
			return &jobError{msg: reason}
		case phaseAfterJob: // afterjob.go: a requeued job's earlier run
			return jobErrorf("the storage tier of job %d's previous run is still kept on node %s to drain its files after the job (strata tier status %d); the job can run here once that is over",
				req.JobID, s.cfg.Node, req.JobID)
		default:
			return jobErrorf("the storage tier of job %d was left %s by a restarted agent", req.JobID, phase)
		}
	}
	capacity := uint64(spec.NodeCapacity(len(nodes)))
	if capacity == 0 {
		capacity = s.cfg.DefaultCapacity
	}
	t.spec = spec
	t.smu.Lock() // status calls read the state concurrently
	t.st = tierState{
		Job: req.JobID, UID: req.UID, GID: req.GID, Spec: req.Spec, Nodes: nodes, Index: idx,
		MountPath: s.cfg.Tier.MountPath(spec, req.JobID), Capacity: capacity, Phase: phaseAssembling,
		Procs: map[string]procInfo{}, Drains: map[string]*drainRec{}, Created: time.Now(),
		Stats: rpc.TierNodeStats{Node: s.cfg.Node}, Run: s.jobRun(req),
	}
	t.smu.Unlock()
	t.rep = s.newReporter(req.JobID, t.st.Run)
	if t.st.first() {
		t.rep.put(rpc.TierPutReq{State: rpc.TierAssembling, Info: &rpc.TierInfo{
			UID: req.UID, GID: req.GID, Nodes: nodes, Capacity: capacity, Spec: spec.String(),
			MountPath: t.st.MountPath, Created: t.st.Created.UnixNano(),
		}})
	}
	err = s.assemble(ctx, t)
	if err == nil {
		return nil
	}
	reason := err.Error()
	if !isJobError(err) {
		reason = fmt.Sprintf("the storage tier could not be set up on node %s: %v", s.cfg.Node, err)
	}
	_ = t.setPhase(phaseFailed, oneLine(reason))
	if t.st.MDSAddr != "" {
		// The other nodes stop waiting for this one (best effort).
		s.markFailed(t, reason)
	}
	// One node's failure is the tier's (the first node's epilog may yet
	// report it done: the registry keeps failed).
	t.rep.put(rpc.TierPutReq{State: rpc.TierFailed, Errors: []string{oneLine(reason)}})
	s.log.Warn("prolog_failed", "job_id", req.JobID, "job_error", isJobError(err), "err", err)
	return err
}

// assemble starts the tier's daemons and mount on this node and stages in
// this node's share.
func (s *Server) assemble(ctx context.Context, t *tier) error {
	st := &t.st
	id := lookupIdentity(st.UID, st.GID)
	for _, d := range []string{t.jobDir, t.data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	secretFile := filepath.Join(t.jobDir, "secret")
	if err := os.WriteFile(secretFile, jobSecret(s.cfg.Secret, st.Job), 0o600); err != nil {
		return fmt.Errorf("tier secret: %w", err)
	}
	host, err := s.nodeAddr(st.Nodes[0])
	if err != nil {
		return err
	}
	// The first node chooses the tier MDS's ports, the others find them
	// (ports.go).
	if st.first() {
		err = s.pickTierAddrs(t, host)
	} else {
		fctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
		err = s.findTierAddrs(fctx, t, host)
		cancel()
	}
	if err != nil {
		return err
	}

	if st.first() {
		unit := t.spec.Unit
		if unit == 0 {
			unit = s.cfg.DefaultUnit
		}
		pol := layout.Policy{Width: len(st.Nodes), Unit: unit, Scheme: layout.Scheme{Kind: layout.KindNone}, HasScheme: true}
		p, err := s.startProc(t.logPath("mds"), "mds", "--id", tierMDSID(st.Job),
			"--listen", st.MDSAddr, "--raft-addr", st.RaftAddr, "--dir", filepath.Join(t.jobDir, "mds"),
			"--secret-file", secretFile, "--default-layout", pol.String(), "--admin-listen", "off",
			"--owner", strconv.FormatUint(uint64(st.UID), 10), "--munge-socket", s.cfg.MungeSocket,
			"--raft-timeout", "100ms", "--heartbeat-interval", "250ms", "--heartbeat-timeout", "2s", "--log-level", "warn")
		if err != nil {
			return err
		}
		t.setProc("mds", p)
	}
	capacity, err := s.reserveCapacity(t, st.Capacity)
	if err != nil {
		if isJobError(err) {
			s.failEarly(ctx, t, err.Error())
		}
		return err
	}
	t.smu.Lock()
	st.Capacity = capacity
	err = t.saveLocked()
	t.smu.Unlock()
	if err != nil {
		return err
	}
	p, err := s.startProc(t.logPath("ds"), "ds", "--id", s.cfg.Node, "--node", s.cfg.Node,
		"--listen", s.cfg.Addr+":0", "--dir", t.data, "--mds", st.MDSAddr, "--secret-file", secretFile,
		"--capacity", strconv.FormatUint(st.Capacity, 10), "--heartbeat-interval", "250ms", "--log-level", "warn")
	if err != nil {
		return err
	}
	t.setProc("ds", p)

	tc, err := t.adminClient(2 * time.Second)
	if err != nil {
		return err
	}
	defer tc.Close()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyTimeout)
	defer cancel()
	if err := s.waitTierMDS(rctx, t, tc); err != nil {
		return err
	}
	if st.first() {
		if err := s.initRoot(rctx, t, tc); err != nil {
			return err
		}
	}
	// Files are striped over every node: no stage-in (and no job) before
	// all data servers are up. Every other node waits for its own: ready
	// is the data server answering (registered up with the tier MDS).
	wait := []string{s.cfg.Node}
	if st.first() || len(t.spec.StageIn) > 0 {
		wait = st.Nodes
	}
	if err := s.waitDataServers(rctx, t, tc, wait); err != nil {
		return err
	}
	if err := s.mountTier(rctx, t, tc); err != nil {
		return err
	}
	if err := s.writeHints(t); err != nil {
		return err
	}
	if len(t.spec.StageIn) > 0 {
		// In the background: the prolog returns now, the job's steps wait
		// (stagerun.go).
		if err := t.setPhase(phaseStaging, ""); err != nil {
			return err
		}
		if st.first() {
			t.rep.put(rpc.TierPutReq{State: rpc.TierStaging})
		}
		s.startStageIn(t, id)
		return nil
	}
	return s.tierRuns(t, id)
}

// setProc records and saves one of the tier's processes.
func (t *tier) setProc(name string, p procInfo) {
	t.smu.Lock()
	t.st.Procs[name] = p
	_ = t.saveLocked()
	t.smu.Unlock()
}

// proc returns one of the tier's processes.
func (t *tier) proc(name string) procInfo {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.st.Procs[name]
}

// stats returns this node's counters.
func (t *tier) stats() rpc.TierNodeStats {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.st.Stats
}

// marker is what every process of this tier has in its command line.
func (t *tier) marker() string { return t.jobDir + "/" }

// adminClient returns a client of the tier's MDS that acts as root: the
// agent's own work on the tier (the root's owner, the marks on it), which
// the tier MDS refuses the job's user (it checks POSIX permissions).
func (t *tier) adminClient(failover time.Duration) (*client.Client, error) {
	return client.New(client.Config{
		MDS: t.st.MDSAddr, Timeout: 10 * time.Second, FailoverTimeout: failover,
		Cred: rpc.Cred{Uid: 0, Gid: 0}, Auth: t.tierCreds,
	})
}

// tierClient returns a client of the tier's MDS that creates files as the
// job's user. failover is how long a call retries an MDS that stopped
// answering (one voter: it is not electing, it is gone or restarting).
func (t *tier) tierClient(failover time.Duration) (*client.Client, error) {
	return client.New(client.Config{
		MDS: t.st.MDSAddr, Timeout: 10 * time.Second, FailoverTimeout: failover,
		Cred: rpc.Cred{Uid: t.st.UID, Gid: t.st.GID}, Auth: t.tierCreds,
	})
}

// poll calls cond every few milliseconds until it is true, fails, or ctx
// ends.
func poll(ctx context.Context, every time.Duration, cond func() (bool, error)) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitTierMDS waits until the tier's MDS leads (on the first node, also
// that its process still runs).
func (s *Server) waitTierMDS(ctx context.Context, t *tier, tc *client.Client) error {
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		if t.st.first() && !alive(t.proc("mds"), t.marker()) {
			return false, errors.New(exitReason("the tier MDS", t.proc("mds")))
		}
		if !alive(t.proc("ds"), t.marker()) {
			return false, errors.New(exitReason("the tier data server", t.proc("ds")))
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := tc.Cluster(cctx)
		return err == nil && c.Role == "leader", nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return jobErrorf("the storage tier's MDS on %s (%s) did not answer within %v", t.st.Nodes[0], t.st.MDSAddr, s.cfg.ReadyTimeout)
	}
	return err
}

// waitDataServers waits until the data servers of nodes are up.
func (s *Server) waitDataServers(ctx context.Context, t *tier, tc *client.Client, nodes []string) error {
	var missing []string
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		if !alive(t.proc("ds"), t.marker()) {
			return false, errors.New(exitReason("the tier data server", t.proc("ds")))
		}
		if err := failedMark(ctx, tc); err != nil {
			return false, err
		}
		c, err := tc.Cluster(ctx)
		if err != nil {
			return false, nil
		}
		up := map[string]bool{}
		for _, d := range c.DataSvrs {
			up[d.ID] = d.State == "up"
		}
		missing = missing[:0]
		for _, n := range nodes {
			if !up[n] {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return jobErrorf("the storage tier's data servers on %v did not come up within %v", missing, s.cfg.ReadyTimeout)
	}
	return err
}

// initRoot gives the tier's root to the job's user (mode 0700: no other
// user sees into it) and publishes tierMeta on it.
func (s *Server) initRoot(ctx context.Context, t *tier, tc *client.Client) error {
	ctx = cred.WithActor(ctx, cred.Actor{}) // as root: it gives the root to the user
	now := time.Now().UnixNano()
	if _, err := tc.Setattr(ctx, rpc.RootIno, rpc.SetattrReq{
		Ino: rpc.RootIno, Valid: rpc.SetUid | rpc.SetGid | rpc.SetMode | rpc.SetAtime | rpc.SetMtime,
		Uid: t.st.UID, Gid: t.st.GID, Mode: rpc.TypeDir | 0o700, Atime: now, Mtime: now,
	}); err != nil {
		return fmt.Errorf("tier root: %w", err)
	}
	meta, _ := json.Marshal(tierMeta{Job: t.st.Job, Spec: t.spec.String(), Mount: t.st.MountPath})
	if err := tc.SetXattrIno(ctx, rpc.RootIno, tierXattr, meta, 0); err != nil {
		return fmt.Errorf("tier root: %w", err)
	}
	return nil
}

// mountTier mounts the tier on its path, once the first node has given
// the root to the user (so that no mount caches the root's old owner).
func (s *Server) mountTier(ctx context.Context, t *tier, tc *client.Client) error {
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		if _, err := tc.GetXattrIno(ctx, rpc.RootIno, tierXattr); err == nil {
			return true, nil
		}
		return false, failedMark(ctx, tc)
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return jobErrorf("the storage tier's first node %s did not set it up within %v", t.st.Nodes[0], s.cfg.ReadyTimeout)
	}
	if err != nil {
		return err
	}
	dir := t.st.MountPath
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	if fuseMountAt(dir) != "" {
		// A stale mount of an earlier tier on the same path.
		if err := unmountTier(dir); err != nil {
			return err
		}
	}
	p, err := s.startProc(t.logPath("mount"), "mount", "--mds", t.st.MDSAddr, "--allow-other",
		"--secret-file", filepath.Join(t.jobDir, "secret"),
		"-o", "fsname=strata-tier:"+t.marker(), "--log-level", "warn", dir)
	if err != nil {
		return err
	}
	t.setProc("mount", p)
	if err := waitMounted(ctx, dir, p, t.marker()); err != nil {
		return fmt.Errorf("mount %s: %w", dir, err)
	}
	return nil
}

// hintsPath is where the ROMIO hints file of job's tier is.
func (s *Server) hintsPath(job uint32) string {
	return filepath.Join(s.cfg.HintsDir, strconv.FormatUint(uint64(job), 10)+".romio")
}

// writeHints writes a ROMIO hints file tuned for the tier's layout (the
// plugin exports it as ROMIO_HINTS), readable by everyone: it holds no
// secret, and the job's user must read it.
func (s *Server) writeHints(t *tier) error {
	unit := t.spec.Unit
	if unit == 0 {
		unit = s.cfg.DefaultUnit
	}
	pol := layout.Policy{Width: len(t.st.Nodes), Unit: unit, Scheme: layout.Scheme{Kind: layout.KindNone}, HasScheme: true}
	if err := os.MkdirAll(s.cfg.HintsDir, 0o755); err != nil {
		return err
	}
	p := s.hintsPath(t.st.Job)
	if err := os.WriteFile(p, []byte(mpiio.ROMIOHintsFile(pol, len(t.st.Nodes))), 0o644); err != nil {
		return fmt.Errorf("romio hints: %w", err)
	}
	return os.Chmod(p, 0o644)
}

// errnoText is the user-facing text of an errno in err ("no such file or
// directory"), or err's own text.
func errnoText(err error) string {
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.EACCES, syscall.EPERM, syscall.ENOTDIR, syscall.ENOSPC, syscall.EISDIR} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}
