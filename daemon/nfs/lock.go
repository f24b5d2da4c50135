package nfs

import (
	"hash/fnv"
	"syscall"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// This file holds LOCK, LOCKT and LOCKU. The locks live in the MDS's lock
// table, the one FUSE mounts use, so an NFS lock and a FUSE lock on the
// same range conflict. Each NFS lock owner becomes an owner of the front
// end's own client session; when an NFS client's lease lapses its locks
// are released.

const lockEOF = ^uint64(0)

// lockRange converts an NFS (offset, length) to an inclusive MDS range.
func lockRange(off, length uint64) (rpc.Lock, uint32) {
	if length == 0 {
		return rpc.Lock{}, nfs4errInval
	}
	if length == lockEOF {
		return rpc.Lock{Start: off, End: rpc.LockEOF}, nfs4OK
	}
	if off+length < off {
		return rpc.Lock{}, nfs4errInval
	}
	return rpc.Lock{Start: off, End: off + length - 1}, nfs4OK
}

func lockType(t uint32) (uint32, bool) {
	switch t {
	case readLT, readwLT:
		return syscall.F_RDLCK, true
	case writeLT, writewLT:
		return syscall.F_WRLCK, true
	}
	return 0, false
}

// lockOwnerID is the MDS lock owner of an NFS lock owner of a client.
func lockOwnerID(client uint64, owner string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(client >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(owner))
	return h.Sum64() | 1
}

// denied writes lock4denied for the conflicting lock held.
func denied(w *xdr.Writer, held rpc.Lock) {
	w.Uint64(held.Start)
	if held.End == rpc.LockEOF {
		w.Uint64(lockEOF)
	} else {
		w.Uint64(held.End - held.Start + 1)
	}
	if held.Type == syscall.F_RDLCK {
		w.Uint32(readLT)
	} else {
		w.Uint32(writeLT)
	}
	w.Uint64(0)
	w.String("strata")
}

func (c *compound) conflict(ino uint64, lk rpc.Lock, w *xdr.Writer) uint32 {
	held, err := c.s.cl.GetLock(c.ctx, ino, lk)
	if err != nil {
		return statusOf(err)
	}
	if held.Type == syscall.F_UNLCK {
		held = lk // raced with an unlock: report the range asked for
	}
	denied(w, held)
	return nfs4errDenied
}

func (c *compound) lock(r *xdr.Reader, w *xdr.Writer) uint32 {
	typ := r.Uint32()
	reclaim := r.Bool()
	off := r.Uint64()
	length := r.Uint64()
	newOwner := r.Bool()
	var openSid, lockSid stateid
	var owner string
	if newOwner {
		r.Uint32()
		openSid = decodeStateid(r)
		r.Uint32()
		r.Uint64()
		owner = string(r.Opaque(maxOpaque))
	} else {
		lockSid = decodeStateid(r)
		r.Uint32()
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if reclaim {
		return nfs4errNoGrace
	}
	lt, ok := lockType(typ)
	if !ok {
		return nfs4errInval
	}
	lk, st := lockRange(off, length)
	if st != nfs4OK {
		return st
	}
	lk.Type = lt
	st2 := c.s.st
	var sr *stateRec
	if newOwner {
		sid, st := c.resolve(openSid)
		if st != nfs4OK {
			return st
		}
		open, st := st2.lookupState(sid, kindOpen)
		if st != nfs4OK {
			return st
		}
		if open.ino != c.cur {
			return nfs4errBadStateid
		}
		st2.mu.Lock()
		k := ownerKey{open.cl.id, owner, open.ino}
		sr = st2.lockOwner[k]
		if sr == nil {
			sr = st2.newStateRec(open.cl, kindLock, open.ino)
			sr.owner, sr.open, sr.lockID = owner, open, lockOwnerID(open.cl.id, owner)
			sr.seqid = 0
			st2.lockOwner[k] = sr
		}
		st2.mu.Unlock()
	} else {
		sid, st := c.resolve(lockSid)
		if st != nfs4OK {
			return st
		}
		sr, st = st2.lookupState(sid, kindLock)
		if st != nfs4OK {
			return st
		}
		if sr.ino != c.cur {
			return nfs4errBadStateid
		}
	}
	if lt == syscall.F_WRLCK && sr.open.access&shareAccessWrite == 0 || lt == syscall.F_RDLCK && sr.open.access&shareAccessRead == 0 {
		return nfs4errOpenmode
	}
	lk.Owner = sr.lockID
	if err := c.s.cl.SetLock(c.ctx, sr.ino, lk, false); err != nil {
		if rpc.ToErrno(err) == syscall.EAGAIN {
			return c.conflict(sr.ino, lk, w)
		}
		return statusOf(err)
	}
	st2.mu.Lock()
	sr.seqid++
	id := sr.id()
	st2.mu.Unlock()
	encodeStateid(w, id)
	c.setCurSid(id)
	return nfs4OK
}

func (c *compound) lockt(r *xdr.Reader, w *xdr.Writer) uint32 {
	typ := r.Uint32()
	off := r.Uint64()
	length := r.Uint64()
	client := r.Uint64()
	owner := string(r.Opaque(maxOpaque))
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	if a.IsDir() {
		return nfs4errIsdir
	}
	lt, ok := lockType(typ)
	if !ok {
		return nfs4errInval
	}
	lk, st := lockRange(off, length)
	if st != nfs4OK {
		return st
	}
	lk.Type = lt
	lk.Owner = lockOwnerID(client, owner)
	held, err := c.s.cl.GetLock(c.ctx, c.cur, lk)
	if err != nil {
		return statusOf(err)
	}
	if held.Type == syscall.F_UNLCK {
		return nfs4OK
	}
	denied(w, held)
	return nfs4errDenied
}

func (c *compound) locku(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint32()
	r.Uint32()
	sid := decodeStateid(r)
	off := r.Uint64()
	length := r.Uint64()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	lk, st := lockRange(off, length)
	if st != nfs4OK {
		return st
	}
	sid, st = c.resolve(sid)
	if st != nfs4OK {
		return st
	}
	sr, st := c.s.st.lookupState(sid, kindLock)
	if st != nfs4OK {
		return st
	}
	lk.Type = syscall.F_UNLCK
	lk.Owner = sr.lockID
	if err := c.s.cl.SetLock(c.ctx, sr.ino, lk, false); err != nil {
		return statusOf(err)
	}
	c.s.st.mu.Lock()
	sr.seqid++
	id := sr.id()
	c.s.st.mu.Unlock()
	encodeStateid(w, id)
	c.setCurSid(id)
	return nfs4OK
}

// releaseState undoes what a dropped stateid held: an open's file, a lock
// owner's locks.
func (s *Server) releaseState(sr *stateRec) {
	switch sr.kind {
	case kindOpen:
		if err := s.files.release(sr.ino); err != nil {
			s.log.Warn("nfs_close_failed", "inode", sr.ino, "err", err)
		}
	case kindLock:
		if err := s.cl.ReleaseLocks(s.ctx, sr.ino, sr.lockID); err != nil {
			s.log.Warn("nfs_unlock_failed", "inode", sr.ino, "err", err)
		}
	case kindLayout:
		if sr.write {
			if err := s.cl.LayoutReturnIno(s.ctx, sr.ino, true); err != nil {
				s.log.Warn("nfs_layoutreturn_failed", "inode", sr.ino, "err", err)
			}
		}
	}
}
