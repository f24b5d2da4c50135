package mds

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Group commit. Handlers do not call raft.Apply one command each: they
// queue their encoded command with the proposer, and what has queued goes
// out as one raft entry (a cmdBatch when there is more than one). While
// maxInflight entries are in raft, commands queue up and go out together
// in the next entry, so under load raft's per-entry cost (future,
// channels, log encoding, FSM dispatch) is paid once per batch, not once
// per operation.
//
// The proposer owns no goroutine: the handlers themselves do its work
// (leader/follower group commit, as a database's log writer does). A
// handler that queues while fewer than maxInflight entries are in raft
// takes the queue and proposes it itself, and waits for that entry's
// future; once it is applied it proposes what queued meanwhile at once,
// hands that entry's future to the goroutine of its first command (which
// waits for it in turn), and only then gives each command of its own entry
// its result. An idle server so sends a lone command from the handler's
// goroutine and answers it from there, with no hand-off between
// goroutines; under load one wake-up (the leader's) separates an entry's
// apply from the next one's proposal.
//
// One entry at a time (stop and wait) measured best: raft's leader loop
// chooses at random between a new entry and the commit of the last one,
// so a second entry waiting in raft delays the first one's commit by
// another fsync half of the time (measured again with the handlers
// proposing: two entries in flight lost a third to half of the coalesced
// creates of BenchmarkMetadata).
const (
	maxInflight   = 1         // raft entries proposed and not yet applied
	maxBatchCmds  = 512       // commands per batch entry
	maxBatchBytes = 256 << 10 // encoded commands per batch entry
)

// proposal is one queued command and, once its entry is applied, its
// result.
type proposal struct {
	data []byte
	res  result
	err  error
	// done (buffered 1; reused through the proposer's pool) receives nil
	// once res and err are set, or before that, if this proposal is the
	// first of an entry proposed by another goroutine, that entry: the
	// receiver waits for it and answers its proposals (lead).
	done chan *inflightBatch
}

// inflightBatch is a proposed raft entry and the proposals it carries.
type inflightBatch struct {
	f     raft.ApplyFuture
	props []*proposal
}

// proposer batches commands into raft entries. It is safe for concurrent
// use and owns no goroutine (see Group commit above).
type proposer struct {
	r    *raft.Raft
	pool sync.Pool // *proposal

	// queued counts the commands ever queued: the GC loop yields while it
	// moves (gc.go).
	queued atomic.Uint64

	mu       sync.Mutex
	queue    []*proposal
	inflight int // entries proposed and not yet answered, at most maxInflight
}

func newProposer(r *raft.Raft) *proposer {
	return &proposer{r: r}
}

// apply runs one encoded command through raft and returns the FSM's result.
func (p *proposer) apply(data []byte) (result, error) {
	var res [1]result
	var errs [1]error
	p.applyMany([][]byte{data}, res[:], errs[:])
	return res[0], errs[0]
}

// applyMany runs encoded commands through raft, queued together so that
// they go out in the same entry when they fit, and stores each one's
// result and error at its index in res and errs (as long as cmds).
func (p *proposer) applyMany(cmds [][]byte, res []result, errs []error) {
	props := make([]*proposal, len(cmds))
	for i, data := range cmds {
		pr, _ := p.pool.Get().(*proposal)
		if pr == nil {
			pr = &proposal{done: make(chan *inflightBatch, 1)}
		}
		pr.data = data
		props[i] = pr
	}
	p.queued.Add(uint64(len(props)))
	p.mu.Lock()
	p.queue = append(p.queue, props...)
	b := p.takeLocked()
	p.mu.Unlock()
	if b != nil {
		p.lead(p.propose(b))
	}
	for i, pr := range props {
		for b := range pr.done {
			if b == nil {
				break
			}
			p.lead(b)
		}
		res[i], errs[i] = pr.res, pr.err
		*pr = proposal{done: pr.done}
		p.pool.Put(pr)
	}
}

// takeLocked returns the next entry's proposals and counts it in flight,
// or nil if the queue is empty or maxInflight entries are in raft. p.mu
// is held.
func (p *proposer) takeLocked() []*proposal {
	if len(p.queue) == 0 || p.inflight >= maxInflight {
		return nil
	}
	n, size := 0, 0
	for n < len(p.queue) && n < maxBatchCmds && (n == 0 || size+len(p.queue[n].data) <= maxBatchBytes) {
		size += len(p.queue[n].data)
		n++
	}
	props := make([]*proposal, n)
	copy(props, p.queue)
	clear(p.queue[:n])
	p.queue = append(p.queue[:0], p.queue[n:]...)
	p.inflight++
	return props
}

// propose sends props to raft as one entry.
func (p *proposer) propose(props []*proposal) *inflightBatch {
	data := props[0].data
	if len(props) > 1 {
		cmds := make([][]byte, len(props))
		for i, pr := range props {
			cmds[i] = pr.data
		}
		data = encodeBatch(cmds)
	}
	return &inflightBatch{f: p.r.Apply(data, applyTimeout), props: props}
}

// lead waits for entry b to be applied, proposes the entry of what queued
// meanwhile (handing its future to the goroutine of its first proposal),
// and gives each proposal of b its result.
func (p *proposer) lead(b *inflightBatch) {
	err := b.f.Error()
	p.mu.Lock()
	p.inflight--
	next := p.takeLocked()
	p.mu.Unlock()
	if next != nil {
		nb := p.propose(next)
		nb.props[0].done <- nb
	}
	var resp any
	if err == nil {
		resp = b.f.Response()
	}
	for i, pr := range b.props {
		switch {
		case err != nil:
			pr.err = raftError(err)
		case len(b.props) == 1:
			pr.res, _ = resp.(result)
			pr.err = pr.res.err
		default:
			rs, _ := resp.(batchResult)
			if i < len(rs) {
				pr.res, pr.err = rs[i], rs[i].err
			} else {
				pr.err = rpc.Errorf(syscall.EIO, "mds: batch entry returned no result")
			}
		}
		pr.done <- nil
	}
}
