package jobtier

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The SPANK plugin (spank/spank_strata.c) and the node agent talk over the
// agent's root-only unix socket: per connection, the plugin writes one
// HookRequest as a JSON line, the agent answers one HookReply as a JSON
// line, and the connection is closed. docs/slurm.md is the contract.

// HookOp is what the plugin asks of the agent.
type HookOp string

// The hook operations.
const (
	// OpProlog is sent from the job prolog on every allocated node:
	// assemble this node's part of the tier and stage in.
	OpProlog HookOp = "prolog"
	// OpEpilog is sent from the job epilog on every allocated node:
	// final drain, then unmount, stop and wipe.
	OpEpilog HookOp = "epilog"
	// OpStatus is sent when a job step starts on a node: where the tier
	// is, and whether it is usable.
	OpStatus HookOp = "status"
	// OpCleanup is sent by `strata agent cleanup JOB` (an administrator,
	// as root): tear down the tier of a job that Slurm says has ended, as
	// its epilog would have.
	OpCleanup HookOp = "cleanup"
)

// MaxHookWait is the longest Wait a status request may ask for.
const MaxHookWait = 30

// MaxHookLine is the longest request or reply line, newline included.
const MaxHookLine = 64 << 10

// HookRequest is one request line.
type HookRequest struct {
	Op    HookOp `json:"op"`
	JobID uint32 `json:"job_id"`
	UID   uint32 `json:"uid"`
	GID   uint32 `json:"gid"`
	// Nodes is the job's node list as Slurm writes it (SLURM_JOB_NODELIST,
	// a hostlist expression like n[1-3]); prolog and epilog only.
	Nodes string `json:"nodes,omitempty"`
	// Node is the Slurm name of the node the plugin runs on.
	Node string `json:"node"`
	// Spec is the job's --storage-tier value as the user wrote it
	// (validated at submit time; the agent parses it again); prolog and
	// epilog only.
	Spec string `json:"spec,omitempty"`
	// Wait, in seconds (status only, at most MaxHookWait), lets the
	// agent hold the answer while the tier is still being set up or
	// staged in, until it is ready, fails, or Wait passes; then a reply
	// with Pending says to ask again. 0 answers at once.
	Wait int `json:"wait,omitempty"`
	// Force (cleanup only) tears the tier down even when Slurm does not
	// say that the job has ended.
	Force bool `json:"force,omitempty"`
	// Restarts is the job's Slurm restart count (SLURM_JOB_RESTART_COUNT:
	// which run of a requeued job this is); prolog and epilog, nil from a
	// plugin that does not send it.
	Restarts *uint32 `json:"restarts,omitempty"`
}

// HookReply is one reply line. OK false with UserError true is the job's
// fault (the job fails, the node stays in service); OK false without it is
// the node's (the prolog or epilog fails and Slurm drains the node).
type HookReply struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	UserError bool   `json:"user_error,omitempty"`
	// TierDir is where the tier is mounted on this node; status only.
	TierDir string `json:"tier_dir,omitempty"`
	// ROMIOHints is a ROMIO hints file tuned for the tier; status only,
	// optional.
	ROMIOHints string `json:"romio_hints,omitempty"`
	// Pending (status only, with OK false) says that the tier is still
	// being set up or staged in: the step waits and asks again. Error
	// says how far it is.
	Pending bool `json:"pending,omitempty"`
}

// Validate checks the fields the op needs.
func (q HookRequest) Validate() error {
	switch q.Op {
	case OpProlog, OpEpilog:
		if q.Nodes == "" || q.Spec == "" {
			return fmt.Errorf("%w: %s needs nodes and spec", ErrBadHook, q.Op)
		}
	case OpStatus, OpCleanup:
	default:
		return fmt.Errorf("%w: unknown op %q (want prolog, epilog, status or cleanup)", ErrBadHook, q.Op)
	}
	if q.Wait < 0 || q.Wait > MaxHookWait {
		return fmt.Errorf("%w: wait %d: want 0 to %d seconds", ErrBadHook, q.Wait, MaxHookWait)
	}
	if q.JobID == 0 || q.Node == "" {
		return fmt.Errorf("%w: %s needs job_id and node", ErrBadHook, q.Op)
	}
	return nil
}

// ReadHookRequest reads and validates one request line from r. Unknown
// fields are ignored, so that a newer plugin can talk to an older agent.
func ReadHookRequest(r *bufio.Reader) (HookRequest, error) {
	var q HookRequest
	if err := readLine(r, &q); err != nil {
		return HookRequest{}, err
	}
	return q, q.Validate()
}

// ReadHookReply reads one reply line from r.
func ReadHookReply(r *bufio.Reader) (HookReply, error) {
	var p HookReply
	err := readLine(r, &p)
	return p, err
}

// WriteHookLine writes v (a HookRequest or HookReply) as one JSON line.
func WriteHookLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b)+1 > MaxHookLine {
		return fmt.Errorf("%w: line of %d bytes, more than %d", ErrBadHook, len(b)+1, MaxHookLine)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one newline-terminated JSON object of at most
// MaxHookLine bytes into v.
func readLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxHookLine {
			return fmt.Errorf("%w: line longer than %d bytes", ErrBadHook, MaxHookLine)
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(line) > 0 {
			return fmt.Errorf("%w: line not terminated by a newline", ErrBadHook)
		}
		return err
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return fmt.Errorf("%w: want a JSON object", ErrBadHook)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadHook, err)
	}
	return nil
}
