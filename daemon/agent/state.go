package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	cred "github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/jobtier"
)

// Phases of a tier on one node. A tier in phaseFailed is unusable; its
// Reason says why (the job fails with it). The epilog removes the state.
const (
	phaseAssembling = rpc.TierAssembling
	phaseStaging    = rpc.TierStaging
	phaseRunning    = rpc.TierRunning
	phaseDraining   = rpc.TierDraining
	phaseFailed     = rpc.TierFailed
)

// procInfo is one tier daemon process. Start is its start time in clock
// ticks since boot (/proc/PID/stat field 22): with the PID it names the
// process even after the PID is reused.
type procInfo struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Log   string `json:"log"`
}

// drainRec is what the first node knows of one file matching a drain
// rule. A file is drained again when its size or mtime changes.
type drainRec struct {
	Size  uint64 `json:"size"`
	Mtime int64  `json:"mtime"`
	CRC   uint32 `json:"crc32c"`
	Dest  string `json:"dest"`
	State string `json:"state"` // drained, lost, failed
	Err   string `json:"error,omitempty"`
}

// Drain record states.
const (
	drainDone   = "drained"
	drainLost   = "lost"
	drainFailed = "failed"
)

// tierState is one job's tier on this node, as persisted in
// StateDir/jobs/JOB.json.
type tierState struct {
	Job       uint32               `json:"job"`
	UID       uint32               `json:"uid"`
	GID       uint32               `json:"gid"`
	Spec      string               `json:"spec"` // as the user wrote it
	Nodes     []string             `json:"nodes"`
	Index     int                  `json:"index"` // this node's place in Nodes
	MountPath string               `json:"mount_path"`
	MDSAddr   string               `json:"mds_addr"`
	RaftAddr  string               `json:"raft_addr"`
	Capacity  uint64               `json:"capacity"` // per node
	Phase     string               `json:"phase"`
	Reason    string               `json:"reason,omitempty"` // why a failed tier is unusable
	Procs     map[string]procInfo  `json:"procs"`            // "mds", "ds", "mount"
	Drains    map[string]*drainRec `json:"drains,omitempty"` // first node: tier path -> record
	Stats     rpc.TierNodeStats    `json:"stats"`
	Created   time.Time            `json:"created"`
	Run       uint32               `json:"run"` // the job's Slurm restart count at the prolog
	// First node: the job's output file (afterjob.go), the drain
	// failures told there, and until when a tier kept after its job
	// drains.
	Output    string          `json:"output,omitempty"`
	Told      map[string]bool `json:"told,omitempty"`
	KeepUntil time.Time       `json:"keep_until,omitempty"`
}

// first reports whether this node runs the tier's MDS and its drains.
func (st *tierState) first() bool { return st.Index == 0 }

// tier is a tier this agent serves: its persisted state and what runs for
// it in this process. mu serializes the lifecycle (prolog, epilog,
// adoption); smu guards st's fields that the drain workers change.
type tier struct {
	mu   sync.Mutex
	smu  sync.Mutex
	st   tierState
	spec jobtier.Spec

	file   string // the state file
	jobDir string // StateDir/jobs/JOB: logs, secret, the MDS's data
	data   string // NVMeDir/job-JOB: the DS's store

	drain *drainer  // first node, while the job runs
	stage *stageRun // while this node's stage-in runs after the prolog
	// reserved: its capacity is promised on this node's NVMe (capMu).
	reserved bool
	rep      *reporter

	// What the agent's calls authenticate with (docs/security.md): to the
	// global namespace with its secret, to the tier with the tier's.
	globalCreds, tierCreds cred.Credentials
	globalTLS              *tls.Config // nil: plain
}

// saveLocked writes the state atomically; the caller holds smu.
func (t *tier) saveLocked() error {
	b, err := json.MarshalIndent(&t.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := t.file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save tier state: %w", err)
	}
	if err := os.Rename(tmp, t.file); err != nil {
		return fmt.Errorf("save tier state: %w", err)
	}
	return nil
}

// save writes the state atomically.
func (t *tier) save() error {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.saveLocked()
}

// setPhase sets and saves the phase (and the reason of a failure).
func (t *tier) setPhase(phase, reason string) error {
	t.smu.Lock()
	defer t.smu.Unlock()
	t.st.Phase, t.st.Reason = phase, reason
	return t.saveLocked()
}

// phase returns the phase and the reason of a failure.
func (t *tier) phase() (string, string) {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.st.Phase, t.st.Reason
}

// jobsDir is where the state files and job directories live.
func (s *Server) jobsDir() string { return filepath.Join(s.cfg.StateDir, "jobs") }

// newTier returns the in-memory tier of job with its paths; nothing is
// written yet.
func (s *Server) newTier(job uint32) *tier {
	id := strconv.FormatUint(uint64(job), 10)
	return &tier{
		file:        filepath.Join(s.jobsDir(), id+".json"),
		jobDir:      filepath.Join(s.jobsDir(), id),
		data:        filepath.Join(s.cfg.NVMeDir, "job-"+id),
		globalCreds: cred.NewNodeCredentials(s.cfg.Secret, cred.RoleNode, s.cfg.Node, ""),
		tierCreds:   cred.NewNodeCredentials(jobSecret(s.cfg.Secret, job), cred.RoleNode, s.cfg.Node, ""),
		globalTLS:   s.gtls,
	}
}

// loadTier reads a state file.
func (s *Server) loadTier(file string) (*tier, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var st tierState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("tier state %s: %w", file, err)
	}
	if st.Job == 0 {
		return nil, fmt.Errorf("tier state %s: no job id", file)
	}
	t := s.newTier(st.Job)
	t.st = st
	if t.st.Procs == nil {
		t.st.Procs = map[string]procInfo{}
	}
	if t.st.Drains == nil {
		t.st.Drains = map[string]*drainRec{}
	}
	spec, err := jobtier.Parse(st.Spec)
	if err != nil {
		return nil, fmt.Errorf("tier state %s: %w", file, err)
	}
	t.spec = spec
	return t, nil
}

// removeState deletes the tier's state file.
func (t *tier) removeState() error {
	if err := os.Remove(t.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// jobSecret is the tier's own cluster secret: HMAC-SHA256 of the global
// secret and the job id. Every node derives the same one alone; a tier's
// capabilities are worthless in another tier and in the global namespace.
func jobSecret(global []byte, job uint32) []byte {
	m := hmac.New(sha256.New, global)
	m.Write([]byte("strata-tier-job:" + strconv.FormatUint(uint64(job), 10)))
	return m.Sum(nil)
}

// nodeAddr returns the address of node: this node's own, the configured
// map's, or NodeAddr from `scontrol show node`.
func (s *Server) nodeAddr(node string) (string, error) {
	if node == s.cfg.Node {
		return s.cfg.Addr, nil
	}
	if a, ok := s.cfg.NodeAddrs[node]; ok {
		return a, nil
	}
	out, err := s.deps.Scontrol("show", "node", "-o", node)
	if err != nil {
		return "", fmt.Errorf("address of node %s: scontrol: %w", node, err)
	}
	for _, f := range strings.Fields(out) {
		if a, ok := strings.CutPrefix(f, "NodeAddr="); ok {
			if ips, err := net.LookupHost(a); err == nil && len(ips) > 0 {
				return ips[0], nil
			}
			return "", fmt.Errorf("address of node %s: cannot resolve NodeAddr %s", node, a)
		}
	}
	return "", fmt.Errorf("address of node %s: scontrol shows no NodeAddr", node)
}
