package nfs

import (
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// allocate is ALLOCATE (NFSv4.2, RFC 7862 section 15.1), what the Linux
// client sends for fallocate(2) mode 0, answered as the FUSE mount
// answers that: NFS4ERR_NOSPC if the bytes past the file's end do not fit
// in the namespace's free space, else the file is extended to the end of
// the range if it is shorter. Strata allocates as data is written, so
// nothing is held back: a later write may still find the data servers
// full.
func (c *compound) allocate(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	off := r.Uint64()
	length := r.Uint64()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	end := off + length
	switch {
	case length == 0:
		return nfs4errInval
	case end < off || end > 1<<63-1:
		return nfs4errFbig
	}
	a, st := c.sizeable(sid)
	if st != nfs4OK {
		return st
	}
	if end <= a.Size {
		return nfs4OK
	}
	fs, err := c.s.cl.StatFS(c.ctx)
	if err != nil {
		return statusOf(err)
	}
	if need := end - max(off, a.Size); need > fs.Free {
		return nfs4errNospc
	}
	if err := c.s.files.truncate(c.ctx, c.cur, int64(end)); err != nil {
		return statusOf(err)
	}
	return nfs4OK
}
