package nfs

import (
	"context"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

const maxTag = 1024

// compound is the state of one COMPOUND request: the current and saved
// file handles, the session its SEQUENCE named, the caller's identity.
type compound struct {
	s    *Server
	ctx  context.Context
	conn *oncrpc.Conn
	call *oncrpc.Call
	cred rpc.Cred
	gids []uint32
	exp  Export
	rule ClientRule

	minor      uint32
	cur, saved uint64 // inode numbers; 0 is "no file handle"
	curSid     stateid
	haveCurSid bool
	savedSid   stateid
	haveSavSid bool
	reqSize    int // bytes of the COMPOUND arguments
	nops       int // operations in the COMPOUND

	sess *session
	slot *slot
}

// opFunc decodes one operation's arguments from r, performs it and writes
// its result body to w, returning the status. A decoding error must be
// returned as NFS4ERR_BADXDR before anything is written.
type opFunc func(c *compound, r *xdr.Reader, w *xdr.Writer) uint32

var ops map[uint32]opFunc

func init() {
	ops = map[uint32]opFunc{
		opAccess: (*compound).access, opClose: (*compound).close, opCommit: (*compound).commit,
		opCreate: (*compound).create, opGetattr: (*compound).getattr, opGetfh: (*compound).getfh,
		opLink: (*compound).link, opLock: (*compound).lock, opLockt: (*compound).lockt, opLocku: (*compound).locku,
		opLookup: (*compound).lookup, opLookupp: (*compound).lookupp, opOpen: (*compound).open,
		opOpenDowngrade: (*compound).openDowngrade, opPutfh: (*compound).putfh, opPutpubfh: (*compound).putrootfh,
		opPutrootfh: (*compound).putrootfh, opRead: (*compound).read, opReaddir: (*compound).readdir,
		opReadlink: (*compound).readlink, opRemove: (*compound).remove, opRename: (*compound).rename,
		opRestorefh: (*compound).restorefh, opSavefh: (*compound).savefh, opSecinfo: (*compound).secinfo,
		opSetattr: (*compound).setattr, opVerify: (*compound).verify, opNverify: (*compound).nverify,
		opWrite:             (*compound).write,
		opBindConnToSession: (*compound).bindConn, opExchangeID: (*compound).exchangeID,
		opCreateSession: (*compound).createSession, opDestroySession: (*compound).destroySession,
		opFreeStateid: (*compound).freeStateid, opSecinfoNoName: (*compound).secinfoNoName,
		opSequence: (*compound).sequence, opTestStateid: (*compound).testStateid,
		opDestroyClientID: (*compound).destroyClientID, opReclaimComplete: (*compound).reclaimComplete,
		opBackchannelCtl: (*compound).backchannelCtl, opDelegReturn: (*compound).delegReturn,
		opLayoutget: (*compound).layoutget, opGetdeviceinfo: (*compound).getdeviceinfo,
		opLayoutreturn: (*compound).layoutreturn, opLayoutcommit: (*compound).layoutcommit,
		opLayouterror: (*compound).layouterror, opLayoutstats: (*compound).layoutstats,
		opGetxattr: (*compound).getxattr, opSetxattr: (*compound).setxattr,
		opListxattrs: (*compound).listxattrs, opRemoveXattr: (*compound).removexattr,
		opAllocate: (*compound).allocate,
	}
}

// sessionless operations may start a compound without SEQUENCE.
func sessionless(op uint32) bool {
	switch op {
	case opExchangeID, opCreateSession, opDestroySession, opDestroyClientID, opBindConnToSession:
		return true
	}
	return false
}

// run decodes and performs a COMPOUND, writing COMPOUND4res to w. It
// returns false when not even the header decodes (GARBAGE_ARGS).
func (c *compound) run(r *xdr.Reader, w *xdr.Writer) bool {
	tag := r.Opaque(maxTag)
	c.minor = r.Uint32()
	n := r.Uint32()
	if r.Err() != nil {
		return false
	}
	start := w.Len()
	statusAt := w.Reserve()
	w.Opaque(tag)
	countAt := w.Reserve()
	if c.minor < 1 || c.minor > 2 {
		w.PutUint32At(statusAt, nfs4errMinorVersMism)
		return true
	}
	if int(n) > c.s.cfg.MaxOps && n > 0 {
		// Answer the first operation only, as RFC 8881 section 2.10.6.4 has
		// SEQUENCE do, without reading 10,000 operations.
		op := r.Uint32()
		w.PutUint32At(countAt, 1)
		w.Uint32(op)
		w.Uint32(nfs4errTooManyOps)
		w.PutUint32At(statusAt, nfs4errTooManyOps)
		return true
	}
	var status uint32 = nfs4OK
	var done uint32
	c.nops = int(n)
	c.reqSize = r.Len() + r.Offset()
	for i := uint32(0); i < n; i++ {
		op := r.Uint32()
		if r.Err() != nil {
			status = nfs4errBadxdr
			w.Uint32(opIllegal)
			w.Uint32(status)
			done++
			break
		}
		fn := ops[op]
		if c.minor < 2 && (xattrOp(op) || op == opAllocate) {
			fn = nil // 4.2's
		}
		if fn == nil {
			// An operation of the minor version this server does not
			// implement is NOTSUPP; a number outside it, OP_ILLEGAL.
			last := uint32(opReclaimComplete)
			if c.minor >= 2 {
				last = opRemoveXattr
			}
			if op >= opAccess && op <= last {
				status = nfs4errNotsupp
				w.Uint32(op)
			} else {
				status = nfs4errOpIllegal
				w.Uint32(opIllegal)
			}
			w.Uint32(status)
			done++
			break
		}
		switch {
		case i == 0 && op != opSequence && !sessionless(op):
			status = nfs4errOpNotInSession
		case i > 0 && op == opSequence:
			status = nfs4errSequencePos
		case i > 0 && c.sess == nil:
			status = nfs4errNotOnlyOp // a compound without SEQUENCE holds one op
		case i == 0 && op == opDestroyClientID && n > 1:
			status = nfs4errNotOnlyOp
		}
		w.Uint32(op)
		if status != nfs4OK {
			w.Uint32(status)
			done++
			break
		}
		at := w.Reserve()
		status = fn(c, r, w)
		if status == nfs4OK && r.Err() != nil {
			status = nfs4errBadxdr
		}
		if c.sess != nil && w.Len()-start > int(c.sess.fore.maxResp) {
			w.Truncate(at + 4)
			status = nfs4errRepTooBig
		}
		w.PutUint32At(at, status)
		done++
		if op == opSequence && status == nfs4OK && c.slot != nil && c.slot.replay != nil {
			// A retransmission: answer with the reply cached for the slot.
			w.Truncate(start)
			w.Fixed(c.slot.replay)
			c.slot.release()
			return true
		}
		if status != nfs4OK {
			c.s.log.Debug("nfs_op_failed", "op", op, "status", status, "inode", c.cur)
			break
		}
	}
	w.PutUint32At(countAt, done)
	w.PutUint32At(statusAt, status)
	if c.slot != nil {
		c.slot.done(w.Bytes()[start:])
	}
	return true
}

// needFH returns NFS4ERR_NOFILEHANDLE when there is no current handle.
func (c *compound) needFH() uint32 {
	if c.cur == 0 {
		return nfs4errNofilehandle
	}
	return nfs4OK
}
