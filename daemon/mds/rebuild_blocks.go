package mds

import (
	"context"
	"fmt"
	"slices"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// Block repair: scrub found blocks failing their checksum in a component of
// a mirror or rs file (scrub.go). The rest of the component is good, so
// only those blocks are rewritten, in place, each from the same bytes of
// another copy or decoded from K other components, as a whole block (the
// data server replaces a whole block's checksum without reading the old
// bytes). The data server holding the component reads the sources and
// writes the blocks itself (rpc.DRebuild, Live): no byte passes through
// the MDS. Readers see the corrupt block (EIO, read around) or the repaired
// one, never a hole. Writers must not race the repair, so like a swap it
// waits for the file's writers and holds new write grants back while it
// runs (stale.go, writers.swap), repairBlocksBatch blocks at a time. Each
// repaired block is read back through the data server's checksum before
// the damage record is dropped (damagedCmd with Clear, for the record as
// found: a newer report stays).

// repairBlocksBatch bounds the blocks one hold of the write gate repairs.
const repairBlocksBatch = 64

// repairBlocks repairs the damaged blocks of task t's component.
func (s *Server) repairBlocks(ctx context.Context, t *task, term uint64) (outcome, error) {
	fs, ok := s.snapFile(t)
	if !ok || fs.damaged == nil || fs.damaged.Found != t.found || fs.stale[t.key.Comp] {
		return outcome{state: "gone"}, nil
	}
	comp := int(t.key.Comp)
	rec := *fs.damaged
	views := s.reg.views()
	if !views[t.from].up {
		return outcome{state: "waiting", detail: fmt.Sprintf("%s, which holds the damaged blocks, is down", t.from)}, nil
	}
	wt := s.wr.watch(fs.ino) // before the look for writers, as rebuildOne
	defer s.wr.unwatch(wt)
	if why := s.wr.busy(fs.ino); why != "" {
		return outcome{state: "waiting", detail: why}, nil
	}
	src, why := planSources(fs, comp, views)
	if src == nil {
		return outcome{state: "blocked", detail: why}, nil
	}
	s.rb.mu.Lock()
	t.to = t.from
	s.rb.mu.Unlock()
	size, err := s.statComp(ctx, fs, comp)
	if err != nil {
		return outcome{}, err
	}
	blocks := slices.Clone(rec.Blocks)
	bs := uint64(rec.BlockSize)
	for len(blocks) > 0 {
		batch := blocks[:min(len(blocks), repairBlocksBatch)]
		blocks = blocks[len(batch):]
		why, err := s.wr.swap(wt, func() error {
			if !s.leads(term) {
				return errNotLeaderTerm
			}
			return s.rewriteBlocks(ctx, t, term, fs, src, batch, bs, size)
		})
		switch {
		case err != nil:
			return outcome{}, fmt.Errorf("repair blocks of component %d of inode %d on %s: %w", comp, fs.ino, t.from, err)
		case why != "":
			return outcome{state: "waiting", detail: why}, nil
		}
	}
	if _, err := s.dsCall(ctx, fs, t.from, comp, rpc.DCommit, rpc.DSReq{}); err != nil {
		return outcome{}, err
	}
	if _, err := s.apply(cmdDamaged, &damagedCmd{Rec: rec, Clear: true, IfFound: rec.Found}); err != nil {
		return outcome{}, err
	}
	s.rmet.repairedBlocks.Add(uint64(len(rec.Blocks)))
	return outcome{state: "done"}, nil
}

// rewriteBlocks has the data server holding task t's component rewrite
// the given blocks (of bs bytes; the component holds size bytes) from src
// and read each back (rpc.DRebuild, Live).
func (s *Server) rewriteBlocks(ctx context.Context, t *task, term uint64, fs fileSnap, src *sources, blocks []uint64, bs, size uint64) error {
	comp := int(t.key.Comp)
	return inParallel(ctx, len(blocks), rebuildInflight, func(ctx context.Context, i int) error {
		off := blocks[i] * bs
		if off >= size {
			return nil // cut since
		}
		n := min(bs, size-off)
		if err := s.rb.bucket.Wait(ctx, int64(n)); err != nil {
			return err
		}
		if !s.leads(term) {
			return errNotLeaderTerm
		}
		if _, err := s.stageCall(ctx, fs, t.from, comp, rpc.ClassRebuild, rpc.DRebuild, s.windowReq(fs, src, rpc.ClassRebuild, off, n, true)); err != nil {
			return fmt.Errorf("block %d: %w", blocks[i], err)
		}
		s.rb.progress(t, n)
		return nil
	})
}
