package mds

import (
	"context"
	"sync"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Group commit. Handlers do not call raft.Apply themselves: they queue
// their encoded command with the proposer, whose goroutine sends what has
// queued as one raft entry (a cmdBatch when there is more than one) and
// hands the future to the waiter goroutine, which gives each handler its
// own result. While maxInflight entries are in raft, commands queue up and
// go out together in the next entry, so under load raft's per-entry cost
// (future, channels, log encoding, FSM dispatch) is paid once per batch,
// not once per operation; an idle server sends a lone command at once.
const (
	maxInflight   = 2         // raft entries proposed and not yet applied
	maxBatchCmds  = 512       // commands per batch entry
	maxBatchBytes = 256 << 10 // encoded commands per batch entry
)

// proposal is one queued command and, once done is signalled, its result.
type proposal struct {
	data []byte
	res  result
	err  error
	done chan struct{} // buffered 1; reused through the proposer's pool
}

// inflightBatch is a proposed raft entry and the proposals it carries.
type inflightBatch struct {
	f     raft.ApplyFuture
	props []*proposal
}

// proposer batches commands into raft entries. Start its two goroutines
// with run; they stop when ctx is done, failing what is still queued.
type proposer struct {
	r    *raft.Raft
	pool sync.Pool // *proposal

	mu     sync.Mutex
	queue  []*proposal
	closed bool
	wake   chan struct{}      // buffered 1: the queue became non-empty
	sent   chan inflightBatch // to the waiter; its capacity bounds what is in flight
}

func newProposer(r *raft.Raft) *proposer {
	return &proposer{
		r:    r,
		wake: make(chan struct{}, 1),
		sent: make(chan inflightBatch, maxInflight-1),
	}
}

// apply runs one encoded command through raft and returns the FSM's result.
func (p *proposer) apply(data []byte) (result, error) {
	pr, _ := p.pool.Get().(*proposal)
	if pr == nil {
		pr = &proposal{done: make(chan struct{}, 1)}
	}
	pr.data = data
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.pool.Put(pr)
		return result{}, raftError(raft.ErrRaftShutdown)
	}
	p.queue = append(p.queue, pr)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	<-pr.done
	res, err := pr.res, pr.err
	*pr = proposal{done: pr.done}
	p.pool.Put(pr)
	return res, err
}

// run starts the proposing and the waiting goroutine; wg is done for each
// when it returns.
func (p *proposer) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(p.sent)
		p.propose(ctx)
	}()
	go func() {
		defer wg.Done()
		p.wait()
	}()
}

// propose sends queued commands to raft until ctx is done.
func (p *proposer) propose(ctx context.Context) {
	var buf [][]byte
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.closed = true
			rest := p.queue
			p.queue = nil
			p.mu.Unlock()
			for _, pr := range rest {
				pr.err = raftError(raft.ErrRaftShutdown)
				pr.done <- struct{}{}
			}
			return
		case <-p.wake:
		}
		for {
			p.mu.Lock()
			n, size := 0, 0
			for n < len(p.queue) && n < maxBatchCmds && (n == 0 || size+len(p.queue[n].data) <= maxBatchBytes) {
				size += len(p.queue[n].data)
				n++
			}
			props := make([]*proposal, n)
			copy(props, p.queue)
			p.queue = append(p.queue[:0], p.queue[n:]...)
			p.mu.Unlock()
			if n == 0 {
				break
			}
			var data []byte
			if n == 1 {
				data = props[0].data
			} else {
				buf = buf[:0]
				for _, pr := range props {
					buf = append(buf, pr.data)
				}
				data = encodeCommand(cmdBatch, &batchCmd{Cmds: buf})
			}
			b := inflightBatch{f: p.r.Apply(data, applyTimeout), props: props}
			select {
			case p.sent <- b: // blocks while maxInflight entries are in raft
			case <-ctx.Done():
				p.sent <- b // the waiter drains: raft fails the future on shutdown
			}
		}
	}
}

// wait gives each proposal its result, batch by batch in log order.
func (p *proposer) wait() {
	for b := range p.sent {
		err := b.f.Error()
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
			pr.done <- struct{}{}
		}
	}
}
