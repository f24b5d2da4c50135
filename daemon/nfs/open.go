package nfs

import (
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// This file holds OPEN, CLOSE and OPEN_DOWNGRADE with share reservations,
// and the stateid housekeeping operations.

const (
	open4NoCreate = 0
	open4Create   = 1

	createUnchecked = 0
	createGuarded   = 1
	createExclusive = 2
	createExcl41    = 3

	claimNull       = 0
	claimPrevious   = 1
	claimDelegCur   = 2
	claimDelegPrev  = 3
	claimFH         = 4
	claimDelegCurFH = 5
	claimDelegPrvFH = 6

	open4ResultLocktypePosix = 0x4
)

func decodeStateid(r *xdr.Reader) stateid {
	var s stateid
	s.seqid = r.Uint32()
	copy(s.other[:], r.Fixed(12))
	return s
}

func encodeStateid(w *xdr.Writer, s stateid) {
	w.Uint32(s.seqid)
	w.Fixed(s.other[:])
}

func (sr *stateRec) id() stateid { return stateid{seqid: sr.seqid, other: sr.other} }

// special stateids (RFC 8881 section 8.2.3).
func (s stateid) anonymous() bool { return s.other == [12]byte{} && s.seqid == 0 }
func (s stateid) bypass() bool {
	return s.other == [12]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} && s.seqid == 0xffffffff
}
func (s stateid) current() bool { return s.other == [12]byte{} && s.seqid == 1 }

// resolve replaces the current stateid by the one the compound holds.
func (c *compound) resolve(s stateid) (stateid, uint32) {
	if !s.current() {
		return s, nfs4OK
	}
	if !c.haveCurSid {
		return s, nfs4errBadStateid
	}
	return c.curSid, nfs4OK
}

func (c *compound) setCurSid(s stateid) {
	c.curSid, c.haveCurSid = s, true
}

func (c *compound) open(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint32() // seqid: unused in 4.1
	access := r.Uint32()
	deny := r.Uint32()
	r.Uint64() // clientid: the session's
	owner := string(r.Opaque(maxOpaque))
	how := r.Uint32()
	mode := uint32(createUnchecked)
	var sa setAttrs
	st := uint32(nfs4OK)
	if how == open4Create {
		mode = r.Uint32()
		switch mode {
		case createUnchecked, createGuarded:
			sa, st = decodeSetAttrs(r)
		case createExclusive:
			r.Fixed(8)
		case createExcl41:
			r.Fixed(8)
			sa, st = decodeSetAttrs(r)
		default:
			return nfs4errBadxdr
		}
	}
	claim := r.Uint32()
	var name string
	switch claim {
	case claimNull, claimDelegPrev:
		name = r.String(maxOpaque)
	case claimPrevious:
		r.Uint32()
	case claimDelegCur:
		decodeStateid(r)
		name = r.String(maxOpaque)
	case claimDelegCurFH:
		decodeStateid(r)
	case claimFH, claimDelegPrvFH:
	default:
		return nfs4errBadxdr
	}
	if r.Err() != nil || st == nfs4errBadxdr {
		return nfs4errBadxdr
	}
	if st != nfs4OK {
		return st
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	want := access & 0xff00 // the WANT_* bits ask for delegations, which are never granted
	access &= 0xff
	if access&shareAccessMask == 0 || access&^shareAccessMask != 0 || deny&^shareDenyBoth != 0 {
		return nfs4errInval
	}
	switch claim {
	case claimPrevious, claimDelegPrev, claimDelegPrvFH:
		return nfs4errNoGrace
	case claimDelegCur, claimDelegCurFH:
		return nfs4errBadStateid
	}
	if access&shareAccessWrite != 0 || how == open4Create {
		if st := c.writable(); st != nfs4OK {
			return st
		}
	}

	var before, after *rpc.Attr
	var file *rpc.Attr
	created := false
	if claim == claimFH {
		a, st := c.attr(c.cur)
		if st != nfs4OK {
			return st
		}
		file = a
	} else {
		if st := checkName(name); st != nfs4OK {
			return st
		}
		dir := c.cur
		before, _ = c.attr(dir)
		if how == open4Create {
			if st := c.mayModifyDir(dir); st != nfs4OK {
				if a, lst := c.lookupName(dir, name); lst == nfs4OK && mode == createUnchecked {
					file = a
				} else {
					return st
				}
			}
			if file == nil {
				perm := uint32(0o666)
				if sa.req.Valid&rpc.SetMode != 0 {
					perm = sa.req.Mode
				}
				excl := mode != createUnchecked
				a, isNew, err := c.s.cl.CreateIno(c.ctx, dir, name, perm, c.cred, excl)
				if err != nil {
					return statusOf(err)
				}
				file, created = a, isNew
				if a.IsDir() {
					return nfs4errIsdir
				}
			}
		} else {
			a, st := c.lookupName(dir, name)
			if st != nfs4OK {
				return st
			}
			file = a
		}
		after, _ = c.attr(dir)
	}
	switch {
	case file.IsDir():
		return nfs4errIsdir
	case file.IsSymlink():
		return nfs4errSymlink
	case !file.IsFile():
		return nfs4errInval
	}
	if !created {
		if access&shareAccessRead != 0 && !c.may(file, permR) && !(file.Uid == c.cred.Uid && access&shareAccessWrite != 0) {
			return nfs4errAccess
		}
		if access&shareAccessWrite != 0 && !c.may(file, permW) {
			return nfs4errAccess
		}
	}
	sr, st := c.openState(file.Ino, owner, access, deny)
	if st != nfs4OK {
		return st
	}
	if !created && sa.req.Valid&rpc.SetSize != 0 && how == open4Create && mode == createUnchecked {
		if sa.req.Size < file.Size {
			c.s.recallBefore(c.ctx, file.Ino, c.sess.cl) // a cut
		}
		if err := c.s.files.truncate(c.ctx, file.Ino, int64(sa.req.Size)); err != nil {
			return statusOf(err)
		}
	}
	c.s.files.refresh(c.ctx, file.Ino)
	encodeStateid(w, sr)
	c.setCurSid(sr)
	changeInfo(w, before, after)
	w.Uint32(open4ResultLocktypePosix)
	if created {
		set := sa.mask
		if mode == createExclusive {
			set = nil
		}
		w.Bitmap(set)
	} else {
		w.Bitmap(nil)
	}
	if want == 0 {
		w.Uint32(0) // OPEN_DELEGATE_NONE
	} else {
		w.Uint32(3) // OPEN_DELEGATE_NONE_EXT
		if want == 0x0400 {
			w.Uint32(0) // WND4_NOT_WANTED
		} else {
			w.Uint32(3) // WND4_NOT_SUPP_FTYPE: none is ever granted
		}
	}
	c.cur = file.Ino
	return nfs4OK
}

// openState finds or makes the open stateid of (client, owner, ino),
// checking share reservations against the other opens of ino.
func (c *compound) openState(ino uint64, owner string, access, deny uint32) (stateid, uint32) {
	st := c.s.st
	cl := c.sess.cl
	st.mu.Lock()
	k := ownerKey{cl.id, owner, ino}
	mine := st.openOwner[k]
	for _, o := range st.stateids {
		if o.kind != kindOpen || o.ino != ino || o == mine {
			continue
		}
		if access&o.deny != 0 || deny&o.access != 0 {
			st.mu.Unlock()
			return stateid{}, nfs4errShareDenied
		}
	}
	if mine == nil {
		mine = st.newStateRec(cl, kindOpen, ino)
		mine.owner = owner
		st.openOwner[k] = mine
		st.mu.Unlock()
		c.s.files.acquire(ino)
		st.mu.Lock()
	} else {
		mine.seqid++
	}
	mine.access |= access
	mine.deny |= deny
	id := mine.id()
	st.mu.Unlock()
	return id, nfs4OK
}

func (c *compound) close(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint32()
	sid := decodeStateid(r)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return st
	}
	sr, st := c.s.st.lookupState(sid, kindOpen)
	if st != nfs4OK {
		return st
	}
	c.s.st.mu.Lock()
	var locks []*stateRec
	for _, l := range sr.cl.states {
		if l.kind == kindLock && l.open == sr {
			locks = append(locks, l)
		}
	}
	for _, l := range locks {
		c.s.st.dropStateRec(l)
	}
	c.s.st.dropStateRec(sr)
	c.s.st.mu.Unlock()
	for _, l := range locks {
		c.s.releaseState(l)
	}
	err := c.s.files.release(sr.ino)
	encodeStateid(w, stateid{seqid: 0xffffffff})
	return statusOf(err)
}

func (c *compound) openDowngrade(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	r.Uint32()
	access := r.Uint32() & 0xff
	deny := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return st
	}
	sr, st := c.s.st.lookupState(sid, kindOpen)
	if st != nfs4OK {
		return st
	}
	c.s.st.mu.Lock()
	defer c.s.st.mu.Unlock()
	if access == 0 || access&^sr.access != 0 || deny&^sr.deny != 0 {
		return nfs4errInval
	}
	sr.access, sr.deny = access, deny
	sr.seqid++
	encodeStateid(w, sr.id())
	c.setCurSid(sr.id())
	return nfs4OK
}

func (c *compound) delegReturn(r *xdr.Reader, w *xdr.Writer) uint32 {
	decodeStateid(r)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	return nfs4errBadStateid // no delegation is ever granted
}

func (c *compound) testStateid(r *xdr.Reader, w *xdr.Writer) uint32 {
	n := r.Count(1024, 16)
	ids := make([]stateid, n)
	for i := range ids {
		ids[i] = decodeStateid(r)
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	w.Uint32(uint32(n))
	for _, s := range ids {
		_, st := c.s.st.lookupState(s, kindOpen, kindLock, kindLayout)
		if st == nfs4OK {
			c.s.st.mu.Lock()
			if sr := c.s.st.stateids[s.other]; sr != nil && sr.cl != c.sess.cl {
				st = nfs4errBadStateid
			}
			c.s.st.mu.Unlock()
		}
		w.Uint32(st)
	}
	return nfs4OK
}

func (c *compound) freeStateid(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return st
	}
	sr, st := c.s.st.lookupState(sid, kindOpen, kindLock, kindLayout)
	if st != nfs4OK {
		return st
	}
	if sr.kind == kindOpen {
		return nfs4errLocksHeld
	}
	c.s.st.mu.Lock()
	c.s.st.dropStateRec(sr)
	c.s.st.mu.Unlock()
	c.s.releaseState(sr)
	return nfs4OK
}
