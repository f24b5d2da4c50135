package nfs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// Recall and fencing (RFC 8881 section 12.5.5, RFC 8435 section 2.2).
//
// The MDS tells the front end (RecallLayouts) before it moves a component
// of a file (rebuild, drain, rebalance), after it swapped one in, and after
// a Strata client cut a file's size or restriped it. Before the front end
// cuts a file for an NFS client (SETATTR or OPEN of a size), it recalls
// the other clients' layouts itself and waits (recallBefore). The
// front end sends CB_LAYOUTRECALL over the backchannel of every client
// holding a layout of the file and waits RecallTimeout for the layouts to
// come back (LAYOUTRETURN; a write layout's grant is then returned to the
// MDS, which lets the move go on). A layout not returned by then is
// fenced: new layouts of the file name the next fence epoch's synthetic
// identity, the data servers it was handed out for refuse the old one
// (ds3.Fence), and its write grant is given back to the MDS. The client's
// next data server call fails with NFS3ERR_ACCES; it returns the layout
// and asks for a new one, which names where the data is now.

// Relay forwards RecallLayouts to the Server set with Set, if any: the
// MDS, which calls it, is made before the front end, its client.
type Relay struct{ p atomic.Pointer[Server] }

// Set makes s receive the recalls.
func (r *Relay) Set(s *Server) { r.p.Store(s) }

// RecallLayouts calls the Server's, if one is set.
func (r *Relay) RecallLayouts(ino uint64) {
	if s := r.p.Load(); s != nil {
		s.RecallLayouts(ino)
	}
}

// recallState is the recalls under way and the files' fence epochs.
type recallState struct {
	mu      sync.Mutex
	started bool // Start ran: s.ctx is set
	closing bool
	active  map[uint64]bool   // inode -> a recall runs
	epochs  map[uint64]uint32 // inode -> fence epoch of its new layouts
	base    uint32            // epoch of a file never fenced (random per start)
	sent    int64             // CB_LAYOUTRECALLs sent
	fenced  int64             // layouts fenced
}

// fenceTarget is one component a layout named: where the front end
// reaches its data server's NFSv3 service (to fence it), the device id
// the client knows it by and the data server's id (for error reports).
type fenceTarget struct {
	addr string
	key  ds3.FenceKey
	dev  [16]byte
	ds   string
}

// RecallStats returns how many layouts were recalled and how many of them
// were fenced because they did not come back in time.
func (s *Server) RecallStats() (recalled, fenced int64) {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	return s.rc.sent, s.rc.fenced
}

// epoch returns the fence epoch of new layouts of ino.
func (s *Server) epoch(ino uint64) uint32 {
	s.rc.mu.Lock()
	defer s.rc.mu.Unlock()
	if e, ok := s.rc.epochs[ino]; ok {
		return e
	}
	return s.rc.base
}

// RecallLayouts recalls the layouts clients hold of file ino, and fences
// those not returned within RecallTimeout. It does not block: the MDS
// calls it where it decides to move a component (it satisfies
// mds.LayoutRecaller). A recall of a file already being recalled is
// dropped.
func (s *Server) RecallLayouts(ino uint64) {
	s.rc.mu.Lock()
	if !s.rc.started || s.rc.closing || s.rc.active[ino] {
		s.rc.mu.Unlock()
		return
	}
	s.rc.active[ino] = true
	s.wg.Add(1)
	s.rc.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.recall(s.ctx, ino, nil, false)
		s.rc.mu.Lock()
		delete(s.rc.active, ino)
		s.rc.mu.Unlock()
	}()
}

// recallBefore recalls the layouts of ino that clients other than
// except hold and waits until they are returned, or fenced after
// RecallTimeout: a writer's WRITE to a data server that arrives after a
// cut would grow the component again and its LAYOUTCOMMIT the size, and
// bytes written before the cut would show through a later extension.
func (s *Server) recallBefore(ctx context.Context, ino uint64, except *clientRec) {
	s.rc.mu.Lock()
	ok := s.rc.started && !s.rc.closing
	if ok {
		s.wg.Add(1)
	}
	s.rc.mu.Unlock()
	if !ok {
		return
	}
	defer s.wg.Done()
	s.recall(ctx, ino, except, true)
}

// recall is one recall of the layouts of ino, but those of client except.
// Unless always, a writer recalled less than RecallTimeout ago is not
// asked again.
func (s *Server) recall(ctx context.Context, ino uint64, except *clientRec, always bool) {
	type pending struct {
		lr   *stateRec
		se   *session
		id   stateid
		gone chan struct{}
	}
	var ps []pending
	st := s.st
	now := time.Now()
	st.mu.Lock()
	for _, lr := range st.stateids {
		if lr.kind != kindLayout || lr.ino != ino || lr.fenced || lr.cl == except {
			continue
		}
		if !always && lr.write && now.Sub(lr.recalled) < s.cfg.RecallTimeout {
			// A writer that took a layout again right after a recall
			// keeps the file busy however often it is recalled: ask
			// again once per RecallTimeout, not at every rebuild retry.
			continue
		}
		lr.recalled = now
		var se *session
		for _, x := range lr.cl.sessions {
			x.cbMu.Lock()
			ok := x.cbConn != nil && x.cbProg != 0
			x.cbMu.Unlock()
			if ok {
				se = x
				break
			}
		}
		lr.seqid++ // a recall moves the layout stateid on (RFC 8881 12.5.3)
		if lr.returned == nil {
			lr.returned = make(chan struct{})
		}
		ps = append(ps, pending{lr: lr, se: se, id: lr.id(), gone: lr.returned})
	}
	st.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RecallTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		if p.se == nil {
			continue // no backchannel: fenced when the time is up
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, err := s.sendRecall(ctx, p.se, ino, p.id)
			s.log.Info("nfs_layout_recalled", "inode", ino, "client", p.lr.cl.id, "status", status, "err", err)
			if err == nil && status == nfs4errNomatchLayout {
				// The client holds no layout of the file: forget it.
				s.dropLayout(p.lr)
			}
		}()
	}
	s.rc.mu.Lock()
	s.rc.sent += int64(len(ps))
	s.rc.mu.Unlock()
	var late []*stateRec
	for _, p := range ps {
		select {
		case <-p.gone:
		case <-ctx.Done():
			late = append(late, p.lr)
		}
	}
	wg.Wait()
	if len(late) > 0 && s.ctx.Err() == nil {
		s.fence(s.ctx, ino, late)
	}
}

// dropLayout forgets a layout state and gives back what it holds.
func (s *Server) dropLayout(lr *stateRec) {
	s.st.mu.Lock()
	_, live := s.st.stateids[lr.other]
	if live {
		s.st.dropStateRec(lr)
	}
	s.st.mu.Unlock()
	if live {
		s.releaseState(lr)
	}
}

// sendRecall sends CB_SEQUENCE + CB_LAYOUTRECALL (the whole file, any io
// mode) on the session's backchannel and returns the CB_COMPOUND status.
func (s *Server) sendRecall(ctx context.Context, se *session, ino uint64, id stateid) (uint32, error) {
	se.cbMu.Lock()
	defer se.cbMu.Unlock() // one backchannel slot: one call at a time
	conn, prog := se.cbConn, se.cbProg
	if conn == nil {
		return 0, oncrpc.ErrClosed
	}
	se.cbSeq++
	w := xdr.NewWriter(nil)
	w.String("")       // tag
	w.Uint32(se.minor) // the Linux client finds its session by minor version too
	w.Uint32(0)        // callback ident
	w.Uint32(2)
	w.Uint32(opCbSequence)
	w.Fixed(se.id[:])
	w.Uint32(se.cbSeq)
	w.Uint32(0) // slot
	w.Uint32(0) // highest slot
	w.Bool(false)
	w.Uint32(0) // referring call lists
	w.Uint32(opCbLayoutrecall)
	w.Uint32(layout4FlexFiles)
	w.Uint32(iomodeAny)
	w.Bool(true) // changed: the layout will differ
	w.Uint32(layoutrecallFile)
	w.Opaque(s.fh.encode(ino))
	w.Uint64(0)
	w.Uint64(lengthAll)
	encodeStateid(w, id)
	res, err := conn.Call(ctx, prog, 1, 1, &oncrpc.SysCred{Machine: "strata"}, w.Bytes())
	if err != nil {
		return 0, err
	}
	r := xdr.NewReader(res)
	status := r.Uint32()
	if r.Err() != nil {
		return 0, r.Err()
	}
	return status, nil
}

// fence fences the layouts of ino in late: new layouts of the file name
// the next epoch, the data servers the old epoch's layouts named refuse
// it, and the write grants of late go back to the MDS. The layout states
// stay until their clients return them.
func (s *Server) fence(ctx context.Context, ino uint64, late []*stateRec) {
	s.rc.mu.Lock()
	old, ok := s.rc.epochs[ino]
	if !ok {
		old = s.rc.base
	}
	s.rc.epochs[ino] = old + 1
	s.rc.fenced += int64(len(late))
	s.rc.mu.Unlock()
	targets := map[fenceTarget]bool{}
	var release []*stateRec
	s.st.mu.Lock()
	for _, lr := range s.st.stateids {
		if lr.kind == kindLayout && lr.ino == ino {
			for t := range lr.targets {
				targets[t] = true
			}
		}
	}
	for _, lr := range late {
		if _, live := s.st.stateids[lr.other]; !live {
			continue
		}
		lr.fenced = true
		if lr.write {
			lr.write = false
			release = append(release, lr)
		}
	}
	s.st.mu.Unlock()
	for t := range targets {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := ds3.Fence(fctx, t.addr, s.cfg.HandleKey, t.key, old)
		cancel()
		if err != nil {
			s.log.Warn("nfs_fence_failed", "inode", ino, "ds_addr", t.addr, "comp", t.key.Comp, "err", err)
		}
	}
	for range release {
		if err := s.cl.LayoutReturnIno(ctx, ino, true); err != nil {
			s.log.Warn("nfs_layoutreturn_failed", "inode", ino, "err", err)
		}
	}
	s.log.Info("nfs_layouts_fenced", "inode", ino, "layouts", len(late), "epoch", old, "data_servers", len(targets))
}
