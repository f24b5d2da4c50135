package nfs

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
)

// state holds the server's client records, sessions and stateids. One
// mutex guards it all: every operation on it is a few map lookups.
type state struct {
	s *Server

	mu        sync.Mutex
	nextID    uint64
	clients   map[uint64]*clientRec  // by client id
	byOwner   map[string]*clientRec  // by co_ownerid
	sessions  map[[16]byte]*session  // by session id
	stateids  map[[12]byte]*stateRec // by stateid "other"
	openOwner map[ownerKey]*stateRec // open stateid of (client, owner, inode)
	lockOwner map[ownerKey]*stateRec // lock stateid of (client, owner, inode)
}

type ownerKey struct {
	client uint64
	owner  string
	ino    uint64
}

// clientRec is one NFSv4.1 client (EXCHANGE_ID).
type clientRec struct {
	id        uint64
	owner     string
	verifier  [8]byte
	principal uint32 // uid of the EXCHANGE_ID caller
	confirmed bool
	csSeq     uint32 // last CREATE_SESSION sequence
	csReply   []byte // its cached result
	renewed   time.Time
	reclaimed bool
	sessions  map[[16]byte]*session
	states    map[[12]byte]*stateRec
	// returned holds the layout stateids the client returned whole (at
	// most maxReturned): its LAYOUTCOMMIT may come after the return
	// (layout.go, layoutcommit).
	returned map[[12]byte]returnedLayout
}

// returnedLayout is a layout stateid a client returned: the file and the
// layout generation it was granted.
type returnedLayout struct {
	ino, gen uint64
}

// maxReturned bounds clientRec.returned.
const maxReturned = 64

// session is one NFSv4.1 session: its slot table and backchannel.
type session struct {
	id     [16]byte
	cl     *clientRec
	slots  []*slot
	fore   channelAttrs
	back   channelAttrs
	cbProg uint32
	cbConn *oncrpc.Conn
	cbSeq  uint32
	cbMu   sync.Mutex
	minor  uint32 // minor version of CREATE_SESSION: the client's callbacks carry it
}

// slot is one entry of a session's slot table with its reply cache.
type slot struct {
	mu     sync.Mutex
	seq    uint32
	busy   bool
	cached []byte // the reply of the last request
	replay []byte // set while a retransmission is being answered
}

// release ends a replayed request.
func (sl *slot) release() {
	sl.mu.Lock()
	sl.busy = false
	sl.replay = nil
	sl.mu.Unlock()
}

// done caches the reply of the request the slot carried and frees it.
func (sl *slot) done(reply []byte) {
	sl.mu.Lock()
	sl.cached = append(sl.cached[:0], reply...)
	sl.busy = false
	sl.mu.Unlock()
}

// stateKind tells what a stateid stands for.
type stateKind int

const (
	kindOpen stateKind = iota + 1
	kindLock
	kindLayout
)

// stateRec is an open, lock or layout stateid.
type stateRec struct {
	other  [12]byte
	kind   stateKind
	cl     *clientRec
	ino    uint64
	seqid  uint32
	owner  string
	access uint32 // open: share access
	deny   uint32 // open: share deny
	open   *stateRec
	lockID uint64 // lock: the owner id given to the MDS's lock table
	iomode uint32 // layout: the io modes granted
	told   uint32 // layout: the seqid of the last reply that named it (a recall moves seqid past it)
	gen    uint64 // layout: the layout generation granted
	write  bool   // layout: registered with the MDS as a writer
	// layout: the components its layouts named (recall.go), whether it
	// was fenced, and a channel closed when it is dropped (while recalled)
	targets  map[fenceTarget]bool
	fenced   bool
	recalled time.Time
	returned chan struct{}
}

type stateid struct {
	seqid uint32
	other [12]byte
}

func newState(s *Server) *state {
	return &state{
		s: s, nextID: 1,
		clients: map[uint64]*clientRec{}, byOwner: map[string]*clientRec{},
		sessions: map[[16]byte]*session{}, stateids: map[[12]byte]*stateRec{},
		openOwner: map[ownerKey]*stateRec{}, lockOwner: map[ownerKey]*stateRec{},
	}
}

// newID returns a fresh 64-bit id whose high half is the server's boot
// epoch, so ids of an earlier run are recognized as stale.
func (st *state) newID() uint64 {
	st.nextID++
	return uint64(st.s.boot)<<32 | st.nextID&0xffffffff
}

// newState makes a stateid of kind for cl. Called with st.mu held.
func (st *state) newStateRec(cl *clientRec, kind stateKind, ino uint64) *stateRec {
	sr := &stateRec{kind: kind, cl: cl, ino: ino, seqid: 1}
	binary.BigEndian.PutUint32(sr.other[:4], st.s.boot)
	binary.BigEndian.PutUint64(sr.other[4:], st.newID())
	st.stateids[sr.other] = sr
	cl.states[sr.other] = sr
	return sr
}

// dropStateRec forgets sr. Called with st.mu held.
func (st *state) dropStateRec(sr *stateRec) {
	if sr.returned != nil {
		close(sr.returned)
		sr.returned = nil
	}
	delete(st.stateids, sr.other)
	delete(sr.cl.states, sr.other)
	switch sr.kind {
	case kindOpen:
		k := ownerKey{sr.cl.id, sr.owner, sr.ino}
		if st.openOwner[k] == sr {
			delete(st.openOwner, k)
		}
	case kindLock, kindLayout:
		k := ownerKey{sr.cl.id, sr.owner, sr.ino}
		if st.lockOwner[k] == sr {
			delete(st.lockOwner, k)
		}
	}
}

// remember records that layout lr was returned whole; the caller holds
// st.mu.
func (st *state) remember(lr *stateRec) {
	cl := lr.cl
	if cl.returned == nil || len(cl.returned) >= maxReturned {
		cl.returned = map[[12]byte]returnedLayout{}
	}
	cl.returned[lr.other] = returnedLayout{ino: lr.ino, gen: lr.gen}
}

// returnedLayout finds sid among the layouts cl returned whole, if it is
// one of file ino's.
func (st *state) returnedLayout(cl *clientRec, sid stateid, ino uint64) (returnedLayout, bool) {
	if cl == nil {
		return returnedLayout{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	rl, ok := cl.returned[sid.other]
	return rl, ok && rl.ino == ino
}

// renew extends a client's lease.
func (st *state) renew(cl *clientRec) {
	st.mu.Lock()
	cl.renewed = time.Now()
	st.mu.Unlock()
}

// expire drops the clients whose lease lapsed at now: their sessions,
// opens (files closed) and locks (released in the MDS).
func (st *state) expire(now time.Time) {
	st.mu.Lock()
	var gone []*clientRec
	for _, cl := range st.clients {
		if now.Sub(cl.renewed) > st.s.cfg.Lease {
			gone = append(gone, cl)
		}
	}
	st.mu.Unlock()
	for _, cl := range gone {
		st.s.log.Info("nfs_client_expired", "client", cl.id, "owner", cl.owner)
		st.destroyClient(cl)
	}
}

// destroyClient drops a client and all its state.
func (st *state) destroyClient(cl *clientRec) {
	st.mu.Lock()
	if st.clients[cl.id] != cl {
		st.mu.Unlock()
		return
	}
	delete(st.clients, cl.id)
	if st.byOwner[cl.owner] == cl {
		delete(st.byOwner, cl.owner)
	}
	for id := range cl.sessions {
		delete(st.sessions, id)
	}
	var recs []*stateRec
	for _, sr := range cl.states {
		recs = append(recs, sr)
	}
	for _, sr := range recs {
		st.dropStateRec(sr)
	}
	st.mu.Unlock()
	for _, sr := range recs {
		st.s.releaseState(sr)
	}
}

// connGone forgets c as the backchannel of the sessions using it.
func (st *state) connGone(c *oncrpc.Conn) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, se := range st.sessions {
		se.cbMu.Lock()
		if se.cbConn == c {
			se.cbConn = nil
		}
		se.cbMu.Unlock()
	}
}

// lookupState finds the state record a stateid names, checking its kind
// and seqid. Called without st.mu.
func (st *state) lookupState(sid stateid, kinds ...stateKind) (*stateRec, uint32) {
	return st.lookup(sid, false, kinds...)
}

// lookup is lookupState; with allowOld an older seqid is accepted (a
// LAYOUTGET may race with another, RFC 8881 section 12.5.3).
func (st *state) lookup(sid stateid, allowOld bool, kinds ...stateKind) (*stateRec, uint32) {
	st.mu.Lock()
	defer st.mu.Unlock()
	sr := st.stateids[sid.other]
	if sr == nil {
		if binary.BigEndian.Uint32(sid.other[:4]) != st.s.boot {
			return nil, nfs4errStaleStateid
		}
		return nil, nfs4errBadStateid
	}
	ok := false
	for _, k := range kinds {
		ok = ok || sr.kind == k
	}
	if !ok {
		return nil, nfs4errBadStateid
	}
	if sid.seqid != 0 && sid.seqid != sr.seqid {
		if sid.seqid < sr.seqid && allowOld {
			return sr, nfs4OK
		}
		if sid.seqid < sr.seqid {
			return nil, nfs4errOldStateid
		}
		return nil, nfs4errBadStateid
	}
	return sr, nfs4OK
}
