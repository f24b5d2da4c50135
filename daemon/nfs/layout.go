package nfs

import "github.com/strata-hpc/strata/daemon/nfs/xdr"

// This file holds the pNFS operations. No layout is handed out yet: every
// file is served through the front end (READ/WRITE), which RFC 8881 allows
// (NFS4ERR_LAYOUTUNAVAILABLE).

func (c *compound) layoutget(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Bool()
	r.Uint32()
	r.Uint32()
	r.Uint64()
	r.Uint64()
	r.Uint64()
	decodeStateid(r)
	r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	return nfs4errLayoutunavail
}

func (c *compound) getdeviceinfo(r *xdr.Reader, w *xdr.Writer) uint32 {
	return nfs4errNotsupp
}

func (c *compound) layoutreturn(r *xdr.Reader, w *xdr.Writer) uint32 {
	return nfs4errNotsupp
}

func (c *compound) layoutcommit(r *xdr.Reader, w *xdr.Writer) uint32 {
	return nfs4errNotsupp
}

func (c *compound) layouterror(r *xdr.Reader, w *xdr.Writer) uint32 {
	return nfs4errNotsupp
}

func (c *compound) layoutstats(r *xdr.Reader, w *xdr.Writer) uint32 {
	return nfs4errNotsupp
}

// layoutTypes writes the fs_layout_type attribute: none while no layout is
// handed out, so the kernel client does not ask.
func (s *Server) layoutTypes(w *xdr.Writer) {
	w.Uint32(0)
}
