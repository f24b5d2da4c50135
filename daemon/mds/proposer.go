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
// an entry is on its way to commit, commands queue up and go out together
// in the next entry, so under load raft's per-entry cost (future,
// channels, log encoding, fsync, FSM dispatch) is paid once per batch, not
// once per operation.
//
// The proposer owns no goroutine: the handlers themselves do its work
// (leader/follower group commit, as a database's log writer does). A
// handler that queues while no entry is on its way to commit takes the
// queue and proposes it itself, and waits for that entry's future; once it
// is applied it gives each command of the entry its result. An idle server
// so sends a lone command from the handler's goroutine and answers it from
// there, with no hand-off between goroutines.
//
// The next entry goes out as soon as the previous one is committed, not
// applied: the FSM tells the proposer (committed) when it starts applying
// an entry this proposer sent, and the FSM's goroutine proposes what
// queued meanwhile before it applies the committed entry, handing the new
// entry's future to the goroutine of its first command (which waits for it
// and answers it in turn). The log's fsync of one entry so overlaps the
// FSM's apply of the one before, and the wake-up of a waiting handler is
// off the path from one entry to the next. If the FSM never reports an
// entry (leadership lost, or an entry that is not this proposer's), the
// handler waiting for it proposes the next one once its future answers.
//
// One entry at a time on its way to commit: raft's leader loop chooses at
// random between a new entry and the commit of the last one, so a second
// entry waiting in raft before the first one's commit was processed
// delays that commit by another fsync half of the time (two entries
// proposed before the first was applied lost a third to half of the
// coalesced creates of BenchmarkMetadata). An entry proposed from the
// FSM's goroutine reaches raft after the leader loop handed the previous
// one to the FSM, so it never races that commit.
const (
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
	data  []byte // the entry, encoded under the proposer's lock
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

	mu    sync.Mutex
	queue []*proposal
	// sent is the entry proposed and not yet known to be committed (the
	// FSM started applying it, or its future answered), or nil: the next
	// entry goes out only once it is.
	sent *inflightBatch
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
		p.propose(b)
		p.lead(b)
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

// takeLocked returns the next entry, encoded, with its proposals and
// records it as sent, or nil if the queue is empty or the entry sent
// before is not known to be committed yet. p.mu is held.
func (p *proposer) takeLocked() *inflightBatch {
	if len(p.queue) == 0 || p.sent != nil {
		return nil
	}
	n, size := 0, 0
	for n < len(p.queue) && n < maxBatchCmds && (n == 0 || size+len(p.queue[n].data) <= maxBatchBytes) {
		size += len(p.queue[n].data)
		n++
	}
	b := &inflightBatch{props: make([]*proposal, n)}
	copy(b.props, p.queue)
	clear(p.queue[:n])
	p.queue = append(p.queue[:0], p.queue[n:]...)
	b.data = b.props[0].data
	if n > 1 {
		b.data = encodeBatch(b.props)
	}
	p.sent = b
	return b
}

// propose sends b to raft as one entry.
func (p *proposer) propose(b *inflightBatch) {
	b.f = p.r.Apply(b.data, applyTimeout)
}

// committed is called by the FSM, from raft's FSM goroutine, when it
// starts applying a command entry. If it is the entry this proposer sent
// last, the entry of what queued meanwhile goes out now, and its future
// is handed to the goroutine of its first proposal.
func (p *proposer) committed(l *raft.Log) {
	p.mu.Lock()
	b := p.sent
	if b == nil || !sameEntry(b.data, l.Data) {
		p.mu.Unlock()
		return
	}
	p.sent = nil
	next := p.takeLocked()
	p.mu.Unlock()
	p.handOff(next)
}

// sameEntry reports whether a log entry's data is the slice the proposer
// gave raft.Apply (raft hands the leader's FSM the very Log of the
// future): the same bytes at the same address.
func sameEntry(sent, data []byte) bool {
	return len(sent) > 0 && len(sent) == len(data) && &sent[0] == &data[0]
}

// handOff proposes next, if not nil, and hands its future to the
// goroutine of its first proposal, which leads it.
func (p *proposer) handOff(next *inflightBatch) {
	if next == nil {
		return
	}
	p.propose(next)
	next.props[0].done <- next
}

// lead waits for entry b to be applied and gives each proposal of b its
// result. If the FSM did not report b committed (b failed, or raft did
// not hand it over as sent), the entry of what queued meanwhile goes out
// first.
func (p *proposer) lead(b *inflightBatch) {
	err := b.f.Error()
	p.mu.Lock()
	var next *inflightBatch
	if p.sent == b {
		p.sent = nil
		next = p.takeLocked()
	}
	p.mu.Unlock()
	p.handOff(next)
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
