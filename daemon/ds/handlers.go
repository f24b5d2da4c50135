package ds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

// register installs the DS protocol on mux.
func (s *Server) register(mux *rpc.Mux) {
	rpc.HandleData(mux, rpc.DWrite, s.handleWrite)
	// A write's capability is checked before its body is read: a caller
	// without one costs no memory (rpc.Guard).
	rpc.Guard(mux, rpc.DWrite, func(req *rpc.DSReq) error {
		now := s.clock()
		if err := req.Cap.Verify(s.secret, now, req.ID.Ino, req.ID.Gen, capability.OpWrite); err != nil {
			return rpc.Errorf(syscall.EACCES, "ds: "+err.Error())
		}
		if req.Cap.Ops&capability.OpAdmin == 0 && s.store.tombs.removed(req.ID.Ino, req.ID.Gen, now.UnixNano()) {
			return wireError(fmt.Errorf("%w: inode %d generation %d: its capabilities are revoked", ErrRemoved, req.ID.Ino, req.ID.Gen))
		}
		return nil
	})
	rpc.HandleData(mux, rpc.DRead, s.handleRead)
	rpc.Handle(mux, rpc.DCommit, s.handleCommit)
	rpc.Handle(mux, rpc.DTruncate, s.handleTruncate)
	rpc.Handle(mux, rpc.DGrow, s.handleGrow)
	rpc.Handle(mux, rpc.DPunch, s.handlePunch)
	rpc.Handle(mux, rpc.DRemove, s.handleRemove)
	rpc.Handle(mux, rpc.DRemoveMany, s.handleRemoveMany)
	rpc.Handle(mux, rpc.DStat, s.handleStat)
	rpc.Handle(mux, rpc.DInfo, s.handleInfo)
	rpc.Handle(mux, rpc.DList, s.handleList)
	s.registerScrub(mux)
	s.registerRebuild(mux)
}

// begin verifies req's token for op (for this component, on this server,
// from the client it was issued to) and starts timing the call for the
// load measure; the caller must defer s.end with the returned time. Calls
// of the background classes (rebuild, scrub) are not timed: the load is
// the foreground's, which background work yields to.
func (s *Server) begin(ctx context.Context, req *rpc.DSReq, op capability.Op) (time.Time, error) {
	now := s.clock()
	call := capability.Call{Ino: req.ID.Ino, Gen: req.ID.Gen, Col: req.ID.Col, Op: op, Server: s.cfg.ID}
	if id, ok := identity.FromContext(ctx); ok {
		call.Client = id.Principal
	}
	if err := req.Cap.Check(s.secret, now, call); err != nil {
		return now, rpc.Errorf(syscall.EACCES, "ds: "+err.Error())
	}
	if req.Cap.Ops&capability.OpAdmin == 0 && s.store.tombs.removed(req.ID.Ino, req.ID.Gen, now.UnixNano()) {
		return now, wireError(fmt.Errorf("%w: inode %d generation %d: its capabilities are revoked", ErrRemoved, req.ID.Ino, req.ID.Gen))
	}
	if req.Cap.Class == rpc.ClassRebuild || req.Cap.Class == rpc.ClassRebalance || req.Cap.Class == rpc.ClassScrub {
		return time.Time{}, nil
	}
	return now, nil
}

func (s *Server) end(start time.Time) {
	if !start.IsZero() {
		s.busy.Add(int64(s.clock().Sub(start)))
	}
}

// handleWrite writes the request's data at req.Off. in is the request
// body and is written to disk without a copy.
func (s *Server) handleWrite(ctx context.Context, req *rpc.DSReq, in []byte, _ *rpc.Data) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	if len(in) > rpc.MaxData {
		return nil, wireError(fmt.Errorf("%w: write of %d bytes exceeds %d", ErrRange, len(in), rpc.MaxData))
	}
	release, err := s.admit(ctx, &req.Cap, int64(len(in)))
	if err != nil {
		return nil, err
	}
	defer release()
	size, err := s.store.write(req.ID, req.Off, in, req.Sums)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

// handleRead reads straight into the transport's reply buffer, or, for a
// reader that verifies every block (req.Direct) on a plain connection,
// has the transport send whole blocks from the component's file.
func (s *Server) handleRead(ctx context.Context, req *rpc.DSReq, _ []byte, out *rpc.Data) (*rpc.DSResp, error) {
	// Whole blocks go from the file to the socket, verified by the reader
	// (readdirect.go): a block not in the page cache is read from the disk
	// by the send, after this returns. The QoS slot and the server's busy
	// time then last until the reply is sent (out.Defer), not only while
	// it is planned. A copied reply's disk read is here; its write to the
	// connection was never counted.
	direct := req.Direct && out.Direct() && s.store.bs == rpc.SumBlock
	start, err := s.begin(ctx, req, capability.OpRead)
	if err != nil {
		return nil, err
	}
	if direct {
		out.Defer(func() { s.end(start) })
	} else {
		defer s.end(start)
	}
	if req.Len > rpc.MaxData {
		return nil, wireError(fmt.Errorf("%w: read of %d bytes exceeds %d", ErrRange, req.Len, rpc.MaxData))
	}
	release, err := s.admit(ctx, &req.Cap, int64(req.Len))
	if err != nil {
		return nil, err
	}
	if direct {
		out.Defer(release)
	} else {
		defer release()
	}
	sums := make([]byte, 0, rpc.SumCount(req.Off, int(req.Len))*rpc.SumSize)
	if direct {
		_, size, err := s.store.readDirect(req.ID, req.Off, req.Len, out, &sums)
		if err != nil {
			return nil, wireError(err)
		}
		return &rpc.DSResp{Size: size, Sums: sums}, nil
	}
	n, size, err := s.store.read(req.ID, req.Off, req.Len, out, &sums)
	if err != nil {
		return nil, wireError(err)
	}
	out.Commit(n)
	return &rpc.DSResp{Size: size, Sums: sums}, nil
}

func (s *Server) handleCommit(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	size, err := s.store.commit(req.ID)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

func (s *Server) handleTruncate(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	size, err := s.store.truncate(req.ID, req.Size)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

// handleGrow extends a component to req.Size if it is shorter (with a
// hole), durably: a writer publishing a file size makes every component
// hold at least its share of it, so that a shorter component is a loss,
// never a hole (layout.ComponentSize).
func (s *Server) handleGrow(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	size, err := s.store.grow(req.ID, req.Size)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

// handlePunch makes a range of a component read as zeros and releases its
// space (fallocate(2) punch-hole on the component's file).
func (s *Server) handlePunch(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	size, err := s.store.punch(req.ID, req.Off, req.Len)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

func (s *Server) handleRemove(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpAdmin)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	if req.Tombstone > 0 {
		if err := s.store.tombs.add(req.ID.Ino, req.ID.Gen, req.Tombstone, s.clock().UnixNano()); err != nil {
			return nil, wireError(err)
		}
	}
	if err := s.store.remove(req.ID); err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{}, nil
}

func (s *Server) handleStat(ctx context.Context, req *rpc.DSReq) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpRead)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	size, err := s.store.stat(req.ID)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

// handleInfo needs no token: it reveals nothing about any file.
func (s *Server) handleInfo(_ context.Context, _ *rpc.Empty) (*rpc.DSInfoResp, error) {
	capacity, free := s.free()
	return &rpc.DSInfoResp{ID: s.cfg.ID, Capacity: capacity, Free: free}, nil
}

// wireError translates a store error into the rpc.Error a client sees:
// the one place where this package's errors meet errno values.
func wireError(err error) error {
	var re *rpc.Error
	if errors.As(err, &re) {
		return re
	}
	var ce *checksumError
	if errors.As(err, &ce) {
		return rpc.Errorf(syscall.EIO, ce.Error())
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "ds: ") {
		msg = "ds: " + msg
	}
	return rpc.Errorf(wireErrno(err), msg)
}

func wireErrno(err error) syscall.Errno {
	switch {
	case errors.Is(err, ErrChecksum), errors.Is(err, rpc.ErrSum):
		return syscall.EIO
	case errors.Is(err, ErrNoSpace):
		return syscall.ENOSPC
	case errors.Is(err, ErrRange):
		return syscall.EINVAL
	case errors.Is(err, ErrClosed):
		return syscall.EAGAIN
	case errors.Is(err, ErrRemoved):
		return syscall.ESTALE
	}
	return rpc.ToErrno(err)
}
