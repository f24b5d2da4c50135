package mds

import (
	"context"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// The plus calls (rpc.MCreatePlus, MMkdirPlus, MUnlinkPlus, MRmdirPlus)
// are create, mkdir, unlink and rmdir answered with the directory's
// attributes after the change, and for a create opened for writing with
// the layout and quota room too: one round trip where a mount made two to
// four. Each runs the plain call's handler (its validation before raft,
// its permission checks and its raft command) and then reads what it adds
// from the FSM: the directory's attributes are those once the change was
// applied, or later. The open of a create is a layoutGet for writing of
// the file just made (Created when this call made it), with that call's
// checks.

// registerPlus serves the plus calls on m.
func (s *Server) registerPlus(m *rpc.Mux) {
	handle(s, m, rpc.MCreatePlus, s.createPlus)
	handle(s, m, rpc.MMkdirPlus, s.mkdirPlus)
	handle(s, m, rpc.MUnlinkPlus, s.unlinkPlus)
	handle(s, m, rpc.MRmdirPlus, s.rmdirPlus)
}

func (s *Server) createPlus(ctx context.Context, r *rpc.CreatePlusReq) (*rpc.CreatePlusResp, error) {
	if r.Open {
		// Refused before the create, so that a bad tag makes nothing.
		if _, err := clientTag(r.Job, r.Class); err != nil {
			return nil, err
		}
	}
	cr, err := s.create(ctx, &r.Create)
	if err != nil {
		return nil, err
	}
	resp := &rpc.CreatePlusResp{Create: *cr}
	if r.Open {
		s.openCreated(ctx, r, resp)
	}
	if resp.Dir, err = s.dirAttr(r.Create.Parent); err != nil {
		return nil, err
	}
	return resp, nil
}

// openCreated adds the layout and quota room of the file a create plus
// made or found to resp. The create stands if the open fails: resp then
// has no layout, and the client's own layoutget learns why.
func (s *Server) openCreated(ctx context.Context, r *rpc.CreatePlusReq, resp *rpc.CreatePlusResp) {
	ino := resp.Create.Attr.Ino
	lg := rpc.LayoutGetReq{Ino: ino, Write: true, Created: resp.Create.Created, Job: r.Job, Class: r.Class, Inline: r.Inline}
	l, err := s.layoutGet(ctx, &lg)
	if err != nil {
		return
	}
	resp.Layout, resp.Create.Attr = l, l.Attr
	if q, err := s.quotaRoomOf(ctx, &rpc.QuotaRoomReq{Ino: ino}); err == nil {
		resp.Quota = q
	}
}

func (s *Server) mkdirPlus(ctx context.Context, r *rpc.MkdirReq) (*rpc.EntryPlusResp, error) {
	ar, err := s.mkdir(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.entryPlus(ar.Attr, r.Parent)
}

func (s *Server) unlinkPlus(ctx context.Context, r *rpc.EntryReq) (*rpc.EntryPlusResp, error) {
	if _, err := s.unlink(ctx, r); err != nil {
		return nil, err
	}
	return s.entryPlus(rpc.Attr{}, r.Parent)
}

func (s *Server) rmdirPlus(ctx context.Context, r *rpc.EntryReq) (*rpc.EntryPlusResp, error) {
	if _, err := s.rmdir(ctx, r); err != nil {
		return nil, err
	}
	return s.entryPlus(rpc.Attr{}, r.Parent)
}

// entryPlus answers a plus call that made a (zero for a removal) in
// directory parent.
func (s *Server) entryPlus(a rpc.Attr, parent uint64) (*rpc.EntryPlusResp, error) {
	d, err := s.dirAttr(parent)
	if err != nil {
		return nil, err
	}
	return &rpc.EntryPlusResp{Attr: a, Dir: d}, nil
}

// dirAttr returns the attributes of inode ino as the FSM has them now.
func (s *Server) dirAttr(ino uint64) (rpc.Attr, error) {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	n, err := s.fsm.st.node(ino)
	if err != nil {
		return rpc.Attr{}, err
	}
	return n.attr(), nil
}
