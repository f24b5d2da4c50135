package oncrpc

import (
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// Message types, reply and accept states, auth flavors (RFC 5531).
const (
	MsgCall  = 0
	MsgReply = 1

	MsgAccepted = 0
	MsgDenied   = 1

	Success      = 0
	ProgUnavail  = 1
	ProgMismatch = 2
	ProcUnavail  = 3
	GarbageArgs  = 4
	SystemErr    = 5

	RPCMismatch = 0
	AuthError   = 1

	AuthNone = 0
	AuthSys  = 1

	AuthBadCred  = 1
	AuthTooWeak  = 5
	AuthRejected = 2
)

// MaxAuthBody is the largest credential or verifier body (RFC 5531).
const MaxAuthBody = 400

// Call is a decoded call header.
type Call struct {
	Xid     uint32
	Prog    uint32
	Vers    uint32
	Proc    uint32
	Flavor  uint32
	Cred    []byte // the credential body, aliasing the record
	Sys     *SysCred
	VerfFlv uint32
}

// SysCred is an AUTH_SYS credential.
type SysCred struct {
	Stamp   uint32
	Machine string
	Uid     uint32
	Gid     uint32
	Gids    []uint32
}

// decodeCall decodes the call header after the xid and message type.
// A call with an RPC version other than 2 returns rpcvers false.
func decodeCall(r *xdr.Reader, c *Call) (rpcvers bool) {
	if r.Uint32() != 2 {
		return false
	}
	c.Prog = r.Uint32()
	c.Vers = r.Uint32()
	c.Proc = r.Uint32()
	c.Flavor = r.Uint32()
	c.Cred = r.Opaque(MaxAuthBody)
	c.VerfFlv = r.Uint32()
	r.Opaque(MaxAuthBody)
	return true
}

// ParseSys decodes an AUTH_SYS credential body.
func ParseSys(body []byte) (*SysCred, error) {
	r := xdr.NewReader(body)
	s := &SysCred{}
	s.Stamp = r.Uint32()
	s.Machine = r.String(255)
	s.Uid = r.Uint32()
	s.Gid = r.Uint32()
	n := r.Count(16, 4)
	for range n {
		s.Gids = append(s.Gids, r.Uint32())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// EncodeSys encodes an AUTH_SYS credential body.
func EncodeSys(w *xdr.Writer, s *SysCred) {
	w.Uint32(s.Stamp)
	w.String(s.Machine)
	w.Uint32(s.Uid)
	w.Uint32(s.Gid)
	w.Uint32(uint32(len(s.Gids)))
	for _, g := range s.Gids {
		w.Uint32(g)
	}
}

// acceptedHeader writes a reply header with an AUTH_NONE verifier and an
// accept state.
func acceptedHeader(w *xdr.Writer, xid, stat uint32) {
	w.Uint32(xid)
	w.Uint32(MsgReply)
	w.Uint32(MsgAccepted)
	w.Uint32(AuthNone)
	w.Uint32(0)
	w.Uint32(stat)
}

// deniedHeader writes a denied reply: RPC_MISMATCH (2..2) or AUTH_ERROR.
func deniedHeader(w *xdr.Writer, xid, stat, detail uint32) {
	w.Uint32(xid)
	w.Uint32(MsgReply)
	w.Uint32(MsgDenied)
	w.Uint32(stat)
	if stat == RPCMismatch {
		w.Uint32(2)
		w.Uint32(2)
		return
	}
	w.Uint32(detail)
}
