package ds3

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// Config configures the service.
type Config struct {
	Addr   string // NFSv3 address to serve on
	DSAddr string // the data server's own RPC address
	Secret []byte // cluster secret: handle MACs and capabilities
	MaxIO  int    // largest READ or WRITE; default 1 MiB
	// FenceTTL is how long a fence (fence.go) is kept; default FenceTTL.
	FenceTTL time.Duration
	// Size returns a file's size as the MDS has it. A read that finds
	// fewer bytes than it asked for asks it (missing.go); nil: such a
	// read fails with NFS3ERR_IO.
	Size func(ctx context.Context, ino uint64) (uint64, error)
}

// Server is a running NFSv3 data server service.
type Server struct {
	cfg   Config
	log   *slog.Logger
	rc    *rpc.Client
	verf  [8]byte
	lis   *oncrpc.Listener
	ready chan struct{}

	fence  fences
	fenced atomic.Int64 // fence calls taken
	denied atomic.Int64 // calls refused because their identity was fenced
}

// Fenced returns how many fence calls the service took and how many
// READ, WRITE or COMMIT calls it refused since because their layout's
// identity was fenced.
func (s *Server) Fenced() (fences, refused int64) { return s.fenced.Load(), s.denied.Load() }

// New returns a Server.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	if cfg.Addr == "" || cfg.DSAddr == "" || len(cfg.Secret) == 0 {
		return nil, errors.New("ds3: Addr, DSAddr and Secret are required")
	}
	if cfg.MaxIO == 0 {
		cfg.MaxIO = 1 << 20
	}
	if cfg.FenceTTL == 0 {
		cfg.FenceTTL = FenceTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log.With("component", "ds3"), ready: make(chan struct{})}
	s.rc = rpc.NewClient(rpc.ClientConfig{Timeout: 30 * time.Second, MaxConnsPerHost: 64})
	_, _ = rand.Read(s.verf[:])
	return s, nil
}

// Start listens and serves until Close.
func (s *Server) Start(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	l, err := oncrpc.Listen(ctx, s.cfg.Addr, oncrpc.ConnConfig{MaxRecord: s.cfg.MaxIO + 64<<10, MaxInflight: 64, VersLow: 3, VersHigh: 3}, s, nil)
	if err != nil {
		return fmt.Errorf("ds3: %w", err)
	}
	s.lis = l
	close(s.ready)
	return nil
}

// Ready is closed once the server listens.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr returns the address it listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops serving and closes every connection.
func (s *Server) Close() error {
	if s.lis == nil {
		return nil
	}
	err := s.lis.Close()
	s.rc.Close()
	return err
}

// NFSv3 procedures and status codes (RFC 1813).
const (
	procNull    = 0
	procGetattr = 1
	procAccess  = 4
	procRead    = 6
	procWrite   = 7
	procFsstat  = 18
	procFsinfo  = 19
	procPathcnf = 20
	procCommit  = 21

	nfs3OK         = 0
	nfs3ErrIO      = 5
	nfs3ErrAcces   = 13
	nfs3ErrInval   = 22
	nfs3ErrNospc   = 28
	nfs3ErrStale   = 70
	nfs3ErrBadhdl  = 10001
	nfs3ErrJukebox = 10008
)

// ServeRPC implements oncrpc.Handler.
func (s *Server) ServeRPC(ctx context.Context, c *oncrpc.Conn, call *oncrpc.Call, r *xdr.Reader, w *xdr.Writer) uint32 {
	if call.Prog == FenceProg {
		return s.serveFence(call, r, w)
	}
	if call.Prog != 100003 {
		return oncrpc.ProgUnavail
	}
	if call.Vers != 3 {
		return oncrpc.ProgMismatch
	}
	if call.Proc == procNull {
		return oncrpc.Success
	}
	fh := r.Opaque(64)
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	h, err := DecodeHandle(s.cfg.Secret, fh)
	uid := uint32(0xffffffff)
	if call.Sys != nil {
		uid = call.Sys.Uid
	}
	switch call.Proc {
	case procGetattr, procAccess, procFsinfo, procFsstat, procPathcnf:
		return s.info(ctx, call.Proc, h, err, r, w)
	case procRead:
		return s.read(ctx, h, err, uid, r, w)
	case procWrite:
		return s.write(ctx, h, err, uid, r, w)
	case procCommit:
		return s.commit(ctx, h, err, uid, r, w)
	}
	return oncrpc.ProcUnavail
}

// allowed reports whether AUTH_SYS uid may read (or write) the
// component of h: a synthetic identity of a layout (SynthUID), for
// writing if write, of an epoch not fenced off the component.
func (s *Server) allowed(h Handle, uid uint32, write bool) bool {
	epoch, w, ok := parseUID(uid)
	if !ok || write && !w {
		return false
	}
	if s.fence.refused(FenceKey{Ino: h.Ino, Gen: h.Gen, Comp: h.Comp}, epoch, time.Now()) {
		s.denied.Add(1)
		return false
	}
	return true
}

// token signs a capability for the component's file.
func (s *Server) token(h Handle, op capability.Op) capability.Token {
	t := capability.Token{Ino: h.Ino, Gen: h.Gen, Ops: op, Expiry: time.Now().Add(time.Minute).UnixNano()}
	t.Sign(s.cfg.Secret)
	return t
}

func (s *Server) id(h Handle) rpc.ComponentID {
	return rpc.ComponentID{Ino: h.Ino, Gen: h.Gen, Col: h.Comp}
}

func status3(err error) uint32 {
	if err == nil {
		return nfs3OK
	}
	if errors.Is(err, ErrBadHandle) {
		return nfs3ErrBadhdl
	}
	if errors.Is(err, rpc.ErrUnavailable) {
		return nfs3ErrJukebox
	}
	switch rpc.ToErrno(err) {
	case syscall.ESTALE, syscall.ENOENT:
		return nfs3ErrStale
	case syscall.EACCES, syscall.EPERM:
		return nfs3ErrAcces
	case syscall.ENOSPC:
		return nfs3ErrNospc
	case syscall.EINVAL:
		return nfs3ErrInval
	}
	return nfs3ErrIO
}

// fattr3 writes the attributes of a component (as a regular file of the
// component's size).
func fattr3(w *xdr.Writer, h Handle, size uint64) {
	w.Uint32(1) // NF3REG
	w.Uint32(0o660)
	w.Uint32(1)
	w.Uint32(SynthUID(0, true))
	w.Uint32(GID)
	w.Uint64(size)
	w.Uint64(size)
	w.Uint32(0)
	w.Uint32(0)
	w.Uint64(0x5354524154413300) // fsid
	w.Uint64(h.Ino<<8 | uint64(h.Comp&0xff))
	now := time.Now()
	for range 3 {
		w.Uint32(uint32(now.Unix()))
		w.Uint32(uint32(now.Nanosecond()))
	}
}

func (s *Server) stat(ctx context.Context, h Handle) (uint64, error) {
	var resp rpc.DSResp
	err := s.rc.Call(ctx, s.cfg.DSAddr, rpc.DStat, &rpc.DSReq{Cap: s.token(h, capability.OpRead), ID: s.id(h)}, &resp)
	if rpc.ToErrno(err) == syscall.ENOENT {
		return 0, nil // a column not written yet
	}
	return resp.Size, err
}

func (s *Server) info(ctx context.Context, proc uint32, h Handle, herr error, r *xdr.Reader, w *xdr.Writer) uint32 {
	if proc == procAccess {
		r.Uint32()
	}
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	if herr != nil {
		w.Uint32(status3(herr))
		if proc != procGetattr {
			w.Bool(false)
		}
		return oncrpc.Success
	}
	size, err := s.stat(ctx, h)
	if err != nil {
		w.Uint32(status3(err))
		if proc != procGetattr {
			w.Bool(false)
		}
		return oncrpc.Success
	}
	w.Uint32(nfs3OK)
	if proc != procGetattr {
		w.Bool(true)
	}
	fattr3(w, h, size)
	switch proc {
	case procAccess:
		w.Uint32(0x3f)
	case procFsinfo:
		for _, v := range []uint32{uint32(s.cfg.MaxIO), uint32(s.cfg.MaxIO), 4096, uint32(s.cfg.MaxIO), uint32(s.cfg.MaxIO), 4096, 65536} {
			w.Uint32(v)
		}
		w.Uint64(1 << 62)
		w.Uint32(0)
		w.Uint32(1)
		w.Uint32(0x1b) // LINK|SYMLINK|HOMOGENEOUS|CANSETTIME
	case procFsstat:
		for range 6 {
			w.Uint64(1 << 40)
		}
		w.Uint32(0)
	case procPathcnf:
		w.Uint32(1)
		w.Uint32(255)
		w.Bool(true)
		w.Bool(true)
		w.Bool(false)
		w.Bool(true)
	}
	return oncrpc.Success
}

func (s *Server) read(ctx context.Context, h Handle, herr error, uid uint32, r *xdr.Reader, w *xdr.Writer) uint32 {
	off := r.Uint64()
	count := r.Uint32()
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	fail := func(st uint32) uint32 {
		w.Uint32(st)
		w.Bool(false)
		return oncrpc.Success
	}
	switch {
	case herr != nil:
		return fail(status3(herr))
	case !s.allowed(h, uid, false):
		return fail(nfs3ErrAcces)
	}
	colOff, n := h.colRange(off, uint64(min(int(count), s.cfg.MaxIO)))
	if n == 0 && count > 0 {
		return fail(nfs3ErrInval)
	}
	buf := make([]byte, n)
	var resp rpc.DSResp
	req := rpc.DSReq{Cap: s.token(h, capability.OpRead), ID: s.id(h), Off: colOff, Len: n}
	got, err := s.rc.CallData(ctx, s.cfg.DSAddr, rpc.DRead, &req, nil, &resp, buf)
	if rpc.ToErrno(err) == syscall.ENOENT {
		got, err = 0, nil // no component: a hole or a loss (missing.go)
	}
	if err == nil {
		// The data server's checksums of what it sent (rpc.AppendSums):
		// bytes that went wrong on the way are an I/O error, not data.
		if cerr := rpc.CheckSums(colOff, resp.Sums, buf[:got]); cerr != nil {
			err = fmt.Errorf("%w (%w)", cerr, syscall.EIO)
		}
	}
	if err == nil && uint64(got) < n {
		err = s.checkShort(ctx, h, colOff, n, uint64(got))
	}
	if err != nil {
		return fail(status3(err))
	}
	// Past the column's end, and inside its share of the file's size, the
	// file has a hole; past the size it ends: zeros, which the client cuts
	// at the size the MDS gives.
	clear(buf[got:])
	w.Uint32(nfs3OK)
	w.Bool(false)
	w.Uint32(uint32(n))
	w.Bool(false)
	w.Opaque(buf)
	return oncrpc.Success
}

func wcc(w *xdr.Writer) {
	w.Bool(false)
	w.Bool(false)
}

func (s *Server) write(ctx context.Context, h Handle, herr error, uid uint32, r *xdr.Reader, w *xdr.Writer) uint32 {
	off := r.Uint64()
	r.Uint32() // count: the data's length decides
	stable := r.Uint32()
	data := r.Opaque(s.cfg.MaxIO)
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	fail := func(st uint32) uint32 {
		w.Uint32(st)
		wcc(w)
		return oncrpc.Success
	}
	switch {
	case herr != nil:
		return fail(status3(herr))
	case !s.allowed(h, uid, true):
		return fail(nfs3ErrAcces)
	}
	colOff, n := h.colRange(off, uint64(len(data)))
	if n == 0 && len(data) > 0 {
		return fail(nfs3ErrInval)
	}
	tok := s.token(h, capability.OpWrite)
	// A data server stores nothing without its checksums (rpc.AppendSums).
	req := rpc.DSReq{Cap: tok, ID: s.id(h), Off: colOff, Sums: rpc.AppendSums(nil, colOff, data[:n])}
	if _, err := s.rc.CallData(ctx, s.cfg.DSAddr, rpc.DWrite, &req, data[:n], &rpc.DSResp{}, nil); err != nil {
		return fail(status3(err))
	}
	committed := uint32(0)
	if stable != 0 {
		if err := s.rc.Call(ctx, s.cfg.DSAddr, rpc.DCommit, &rpc.DSReq{Cap: tok, ID: s.id(h)}, &rpc.DSResp{}); err != nil {
			return fail(status3(err))
		}
		committed = 2
	}
	w.Uint32(nfs3OK)
	wcc(w)
	w.Uint32(uint32(n))
	w.Uint32(committed)
	w.Fixed(s.verf[:])
	return oncrpc.Success
}

func (s *Server) commit(ctx context.Context, h Handle, herr error, uid uint32, r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint64()
	r.Uint32()
	if r.Err() != nil {
		return oncrpc.GarbageArgs
	}
	fail := func(st uint32) uint32 {
		w.Uint32(st)
		wcc(w)
		return oncrpc.Success
	}
	switch {
	case herr != nil:
		return fail(status3(herr))
	case !s.allowed(h, uid, true):
		return fail(nfs3ErrAcces)
	}
	err := s.rc.Call(ctx, s.cfg.DSAddr, rpc.DCommit, &rpc.DSReq{Cap: s.token(h, capability.OpWrite), ID: s.id(h)}, &rpc.DSResp{})
	if err != nil && rpc.ToErrno(err) != syscall.ENOENT {
		return fail(status3(err))
	}
	w.Uint32(nfs3OK)
	wcc(w)
	w.Fixed(s.verf[:])
	return oncrpc.Success
}
