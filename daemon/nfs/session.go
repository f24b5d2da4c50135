package nfs

import (
	"crypto/rand"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// This file holds the NFSv4.1 session operations (RFC 8881 section 18):
// EXCHANGE_ID, CREATE_SESSION, SEQUENCE, BIND_CONN_TO_SESSION,
// BACKCHANNEL_CTL, DESTROY_SESSION, DESTROY_CLIENTID, RECLAIM_COMPLETE.

const (
	maxOpaque     = 1024 // NFS4_OPAQUE_LIMIT
	serverScope   = "strata"
	serverMajorID = "strata-nfs"

	sp4None    = 0
	sp4MachCrd = 1
	sp4SSV     = 2

	csFlagPersist     = 0x1
	csFlagConnBackChn = 0x2
)

type channelAttrs struct {
	headerPad, maxReq, maxResp, maxRespCached, maxOps, maxReqs uint32
}

func decodeChannel(r *xdr.Reader) channelAttrs {
	var a channelAttrs
	a.headerPad = r.Uint32()
	a.maxReq = r.Uint32()
	a.maxResp = r.Uint32()
	a.maxRespCached = r.Uint32()
	a.maxOps = r.Uint32()
	a.maxReqs = r.Uint32()
	if n := r.Count(1, 4); n == 1 {
		r.Uint32()
	}
	return a
}

func encodeChannel(w *xdr.Writer, a channelAttrs) {
	w.Uint32(a.headerPad)
	w.Uint32(a.maxReq)
	w.Uint32(a.maxResp)
	w.Uint32(a.maxRespCached)
	w.Uint32(a.maxOps)
	w.Uint32(a.maxReqs)
	w.Uint32(0)
}

func (c *compound) exchangeID(r *xdr.Reader, w *xdr.Writer) uint32 {
	var verf [8]byte
	copy(verf[:], r.Fixed(8))
	owner := string(r.Opaque(maxOpaque))
	flags := r.Uint32()
	how := r.Uint32()
	switch how {
	case sp4None:
	case sp4MachCrd:
		r.Bitmap(8)
		r.Bitmap(8)
	default:
		if r.Err() != nil {
			return nfs4errBadxdr
		}
		return nfs4errEncrAlgUnsupp
	}
	if n := r.Count(1, 12); n == 1 {
		r.String(maxOpaque)
		r.String(maxOpaque)
		r.Int64()
		r.Uint32()
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if flags&^(exchgidSuppMovedRefer|exchgidSuppMovedMigr|exchgidBindPrincState|exchgidMaskPNFS|exchgidUpdConfirmedRec) != 0 {
		return nfs4errInval
	}
	st := c.s.st
	st.mu.Lock()
	cl := st.byOwner[owner]
	update := flags&exchgidUpdConfirmedRec != 0
	switch {
	case update && (cl == nil || !cl.confirmed):
		st.mu.Unlock()
		return nfs4errNoent
	case update && cl.verifier != verf:
		st.mu.Unlock()
		return nfs4errNotSame
	case update:
	case cl != nil && cl.verifier == verf:
		// the same incarnation of the client asks again
	default:
		if cl != nil && cl.confirmed && cl.principal != c.principal() {
			st.mu.Unlock()
			return nfs4errClidInuse
		}
		old := cl
		cl = &clientRec{
			id: st.newID(), owner: owner, verifier: verf, principal: c.principal(),
			sessions: map[[16]byte]*session{}, states: map[[12]byte]*stateRec{}, renewed: time.Now(),
		}
		st.clients[cl.id] = cl
		st.byOwner[owner] = cl
		if old != nil {
			// A rebooted client: its earlier incarnation's state goes.
			st.mu.Unlock()
			st.destroyClient(old)
			st.mu.Lock()
			st.clients[cl.id] = cl
			st.byOwner[owner] = cl
		}
	}
	cl.renewed = time.Now()
	id, seq, confirmed := cl.id, cl.csSeq+1, cl.confirmed
	st.mu.Unlock()

	w.Uint64(id)
	w.Uint32(seq)
	rf := uint32(exchgidUsePNFSMDS)
	if flags&exchgidBindPrincState != 0 {
		rf |= exchgidBindPrincState
	}
	if confirmed {
		rf |= exchgidConfirmedR
	}
	w.Uint32(rf)
	w.Uint32(sp4None)
	w.Uint64(0) // so_minor_id
	w.String(serverMajorID)
	w.String(serverScope)
	w.Uint32(1) // one nfs_impl_id4
	w.String("strata-hpc.org")
	w.String("strata nfs front end")
	w.Int64(0)
	w.Uint32(0)
	return nfs4OK
}

// principal is what ties a client record to its creator (AUTH_SYS uid).
func (c *compound) principal() uint32 {
	if c.call.Sys != nil {
		return c.call.Sys.Uid
	}
	return nobody
}

func (c *compound) createSession(r *xdr.Reader, w *xdr.Writer) uint32 {
	id := r.Uint64()
	seq := r.Uint32()
	flags := r.Uint32()
	fore := decodeChannel(r)
	back := decodeChannel(r)
	prog := r.Uint32()
	n := r.Count(16, 4)
	for range n {
		switch r.Uint32() {
		case oncrpc.AuthNone:
		case oncrpc.AuthSys:
			r.Uint32()
			r.String(255)
			r.Uint32()
			r.Uint32()
			for range r.Count(16, 4) {
				r.Uint32()
			}
		case 6: // RPCSEC_GSS
			r.Uint32()
			r.Opaque(maxOpaque)
			r.Opaque(maxOpaque)
		default:
			r.Fail(xdr.ErrTooLong)
		}
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	st := c.s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	cl := st.clients[id]
	if cl == nil {
		return nfs4errStaleClientid
	}
	switch {
	case seq == cl.csSeq && cl.csReply != nil:
		w.Fixed(cl.csReply)
		return nfs4OK
	case seq != cl.csSeq+1:
		return nfs4errSeqMisordered
	}
	if flags&^(csFlagPersist|csFlagConnBackChn|0x4) != 0 {
		return nfs4errInval
	}
	if fore.maxReq < 256 || fore.maxResp < 256 {
		return nfs4errToosmall // not even a SEQUENCE and its reply fit
	}
	se := &session{cl: cl, cbProg: prog, minor: c.minor}
	_, _ = rand.Read(se.id[:])
	max := uint32(c.s.cfg.MaxRecord)
	se.fore = channelAttrs{
		maxReq:        min(fore.maxReq, max),
		maxResp:       min(fore.maxResp, max),
		maxRespCached: min(fore.maxRespCached, 64<<10),
		maxOps:        min(max32(fore.maxOps, 1), uint32(c.s.cfg.MaxOps)),
		maxReqs:       min(max32(fore.maxReqs, 1), uint32(c.s.cfg.Slots)),
	}
	se.back = channelAttrs{
		maxReq: min(back.maxReq, 64<<10), maxResp: min(back.maxResp, 64<<10),
		maxOps: min(max32(back.maxOps, 1), 8), maxReqs: 1,
	}
	se.slots = make([]*slot, se.fore.maxReqs)
	for i := range se.slots {
		se.slots[i] = &slot{}
	}
	rflags := uint32(0)
	if flags&csFlagConnBackChn != 0 {
		se.cbConn = c.conn
		rflags |= csFlagConnBackChn
	}
	st.sessions[se.id] = se
	cl.sessions[se.id] = se
	cl.confirmed = true
	cl.csSeq = seq
	cl.renewed = time.Now()

	start := w.Len()
	w.Fixed(se.id[:])
	w.Uint32(seq)
	w.Uint32(rflags)
	encodeChannel(w, se.fore)
	encodeChannel(w, se.back)
	cl.csReply = append([]byte(nil), w.Bytes()[start:]...)
	return nfs4OK
}

func max32(a, b uint32) uint32 { return max(a, b) }

func (c *compound) sessionByID(r *xdr.Reader) (*session, uint32) {
	var id [16]byte
	copy(id[:], r.Fixed(16))
	if r.Err() != nil {
		return nil, nfs4errBadxdr
	}
	c.s.st.mu.Lock()
	se := c.s.st.sessions[id]
	c.s.st.mu.Unlock()
	if se == nil {
		return nil, nfs4errBadsession
	}
	return se, nfs4OK
}

func (c *compound) sequence(r *xdr.Reader, w *xdr.Writer) uint32 {
	se, status := c.sessionByID(r)
	seq := r.Uint32()
	slotID := r.Uint32()
	r.Uint32() // highest slot the client uses
	r.Bool()   // cachethis: every reply is cached
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if status != nfs4OK {
		return status
	}
	if slotID >= uint32(len(se.slots)) {
		return nfs4errBadslot
	}
	sl := se.slots[slotID]
	sl.mu.Lock()
	switch {
	case sl.busy:
		sl.mu.Unlock()
		return nfs4errDelay
	case seq == sl.seq && sl.cached != nil:
		sl.busy = true
		sl.replay = append([]byte(nil), sl.cached...)
		sl.mu.Unlock()
		c.slot = sl
		return nfs4OK
	case seq != sl.seq+1:
		sl.mu.Unlock()
		return nfs4errSeqMisordered
	}
	if c.nops > int(se.fore.maxOps) {
		sl.mu.Unlock()
		return nfs4errTooManyOps
	}
	if c.reqSize > int(se.fore.maxReq)+64 { // the RPC header is not counted here
		sl.mu.Unlock()
		return nfs4errReqTooBig
	}
	sl.busy = true
	sl.seq = seq
	sl.mu.Unlock()
	c.sess, c.slot = se, sl
	c.s.st.renew(se.cl)
	se.cbMu.Lock()
	if se.cbConn == nil && c.conn != nil && se.cbProg != 0 {
		se.cbConn = c.conn
	}
	se.cbMu.Unlock()

	w.Fixed(se.id[:])
	w.Uint32(seq)
	w.Uint32(slotID)
	w.Uint32(uint32(len(se.slots) - 1))
	w.Uint32(uint32(len(se.slots) - 1))
	w.Uint32(0) // status flags
	return nfs4OK
}

func (c *compound) bindConn(r *xdr.Reader, w *xdr.Writer) uint32 {
	se, status := c.sessionByID(r)
	dir := r.Uint32()
	r.Bool()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if status != nfs4OK {
		return status
	}
	const back, both = 2, 3
	if dir == back || dir == both {
		se.cbMu.Lock()
		se.cbConn = c.conn
		se.cbMu.Unlock()
	}
	w.Fixed(se.id[:])
	if dir == 0 || dir == both { // CDFC4_FORE or FORE_OR_BOTH
		dir = 3
	}
	w.Uint32(dir)
	w.Bool(false)
	return nfs4OK
}

func (c *compound) backchannelCtl(r *xdr.Reader, w *xdr.Writer) uint32 {
	prog := r.Uint32()
	n := r.Count(16, 4)
	for range n {
		if r.Uint32() == oncrpc.AuthSys {
			r.Uint32()
			r.String(255)
			r.Uint32()
			r.Uint32()
			for range r.Count(16, 4) {
				r.Uint32()
			}
		}
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	c.sess.cbMu.Lock()
	c.sess.cbProg = prog
	c.sess.cbMu.Unlock()
	return nfs4OK
}

func (c *compound) destroySession(r *xdr.Reader, w *xdr.Writer) uint32 {
	se, status := c.sessionByID(r)
	if status != nfs4OK {
		return status
	}
	st := c.s.st
	st.mu.Lock()
	delete(st.sessions, se.id)
	delete(se.cl.sessions, se.id)
	st.mu.Unlock()
	return nfs4OK
}

func (c *compound) destroyClientID(r *xdr.Reader, w *xdr.Writer) uint32 {
	id := r.Uint64()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	st := c.s.st
	st.mu.Lock()
	cl := st.clients[id]
	busy := cl != nil && (len(cl.sessions) > 0 || len(cl.states) > 0)
	st.mu.Unlock()
	switch {
	case cl == nil:
		return nfs4errStaleClientid
	case busy:
		return nfs4errClientidBusy
	}
	st.destroyClient(cl)
	return nfs4OK
}

func (c *compound) reclaimComplete(r *xdr.Reader, w *xdr.Writer) uint32 {
	oneFS := r.Bool()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if oneFS {
		return nfs4OK
	}
	st := c.s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if c.sess.cl.reclaimed {
		return nfs4errCompleteAlready
	}
	c.sess.cl.reclaimed = true
	return nfs4OK
}

func (c *compound) secinfoNoName(r *xdr.Reader, w *xdr.Writer) uint32 {
	style := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if style > 1 {
		return nfs4errInval
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if style == 1 { // SECINFO_STYLE4_PARENT
		if c.cur == c.exportRoot() {
			return nfs4errNoent
		}
		if _, ok := c.s.cookie.parent(c.cur); !ok {
			return nfs4errNoent
		}
	}
	w.Uint32(1)
	w.Uint32(oncrpc.AuthSys)
	c.cur = 0
	return nfs4OK
}

func (c *compound) secinfo(r *xdr.Reader, w *xdr.Writer) uint32 {
	name := r.String(maxName)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if _, st := c.lookupName(c.cur, name); st != nfs4OK {
		return st
	}
	w.Uint32(1)
	w.Uint32(oncrpc.AuthSys)
	c.cur = 0
	return nfs4OK
}
