package nfs

import (
	"errors"
	"io"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// This file holds READ, WRITE and COMMIT through the client library, for
// files the kernel client does not reach over a layout.

// ioState checks the stateid of a READ or WRITE and returns the open file
// to use; done releases it.
func (c *compound) ioState(sid stateid, write bool) (of *openFile, done func(), st uint32) {
	if st := c.needFH(); st != nfs4OK {
		return nil, nil, st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return nil, nil, st
	}
	switch {
	case a.IsDir():
		return nil, nil, nfs4errIsdir
	case a.IsSymlink():
		return nil, nil, nfs4errSymlink
	case !a.IsFile():
		return nil, nil, nfs4errInval
	}
	sid, st = c.resolve(sid)
	if st != nfs4OK {
		return nil, nil, st
	}
	if sid.anonymous() || sid.bypass() {
		if write {
			if st := c.writable(); st != nfs4OK {
				return nil, nil, st
			}
			if !c.may(a, permW) {
				return nil, nil, nfs4errAccess
			}
		} else if !c.may(a, permR) {
			return nil, nil, nfs4errAccess
		}
		of := c.s.files.acquire(c.cur)
		ino := c.cur
		return of, func() { _ = c.s.files.release(ino) }, nfs4OK
	}
	sr, st := c.s.st.lookupState(sid, kindOpen, kindLock)
	if st != nfs4OK {
		return nil, nil, st
	}
	if sr.ino != c.cur {
		return nil, nil, nfs4errBadStateid
	}
	open := sr
	if sr.kind == kindLock {
		open = sr.open
	}
	if write && open.access&shareAccessWrite == 0 {
		return nil, nil, nfs4errOpenmode
	}
	of = c.s.files.acquire(c.cur)
	ino := c.cur
	return of, func() { _ = c.s.files.release(ino) }, nfs4OK
}

func (c *compound) read(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	off := r.Uint64()
	count := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	of, done, st := c.ioState(sid, false)
	if st != nfs4OK {
		return st
	}
	defer done()
	f, err := c.s.files.file(c.cur, of, false)
	if err != nil {
		return statusOf(err)
	}
	n := min(int(count), c.s.cfg.MaxIO)
	if c.sess != nil {
		n = max(0, min(n, int(c.sess.fore.maxResp)-1024)) // leave room for the rest of the reply
	}
	if off >= 1<<62 {
		w.Bool(true)
		w.Opaque(nil)
		return nfs4OK
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, int64(off))
	eof := false
	if errors.Is(err, io.EOF) {
		eof, err = true, nil
	}
	if err != nil {
		return statusOf(err)
	}
	if int64(off)+int64(got) >= f.Size() {
		eof = true
	}
	w.Bool(eof)
	w.Opaque(buf[:got])
	return nfs4OK
}

func (c *compound) write(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	off := r.Uint64()
	stable := r.Uint32()
	data := r.Opaque(c.s.cfg.MaxIO)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if off+uint64(len(data)) >= 1<<62 {
		return nfs4errFbig
	}
	of, done, st := c.ioState(sid, true)
	if st != nfs4OK {
		return st
	}
	defer done()
	f, err := c.s.files.file(c.cur, of, true)
	if err != nil {
		return statusOf(err)
	}
	if _, err := f.WriteAt(data, int64(off)); err != nil {
		return statusOf(err)
	}
	c.s.files.mu.Lock()
	of.writes++
	c.s.files.mu.Unlock()
	committed := uint32(unstable4)
	if stable != unstable4 {
		if err := f.Sync(); err != nil {
			return statusOf(err)
		}
		committed = fileSync4
	}
	w.Uint32(uint32(len(data)))
	w.Uint32(committed)
	w.Fixed(c.s.verifier[:])
	return nfs4OK
}

func (c *compound) commit(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint64()
	r.Uint32()
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
	if !a.IsFile() {
		return nfs4errInval
	}
	c.s.files.mu.Lock()
	of := c.s.files.m[c.cur]
	c.s.files.mu.Unlock()
	if of != nil {
		of.mu.Lock()
		wr := of.wr
		of.mu.Unlock()
		if wr != nil {
			if err := wr.Sync(); err != nil {
				return statusOf(err)
			}
		}
	}
	w.Fixed(c.s.verifier[:])
	return nfs4OK
}
