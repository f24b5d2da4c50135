package nfs

import (
	"crypto/sha256"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// This file holds the pNFS flex-files operations (RFC 8881 section 18.43
// ff., RFC 8435): LAYOUTGET maps a file's Strata layout to flex-files
// layouts whose data servers are the NFSv3 services of Strata's data
// servers (package ds3); LAYOUTCOMMIT publishes size and mtime;
// LAYOUTRETURN and LAYOUTERROR report failed data server calls, which
// mark the components stale as Strata's own LAYOUTERROR does.
//
// The Linux client uses one data server per mirror (it does not stripe
// within a flex-files layout) and only the first layout of a LAYOUTGET
// reply, so a striped file is handed out one stripe unit at a time: each
// layout covers one unit, whose column's data server(s) it names (one per
// copy for mirror:N). A file of one column gets one layout for all of it.
// rs:K+M files get no layout (NFS4ERR_LAYOUTUNAVAILABLE): the client does
// their I/O through the front end.

const (
	ffFlagsNoLayoutcommit = 1
	ffFlagsNoIOThruMDS    = 2
	lengthAll             = ^uint64(0)
)

// pnfs reports whether layouts are handed out.
func (s *Server) pnfs() bool { return len(s.cfg.DataServers) > 0 || s.cfg.DataServerPort != 0 }

// layoutTypes writes the fs_layout_type attribute.
func (s *Server) layoutTypes(w *xdr.Writer) {
	if !s.pnfs() {
		w.Uint32(0)
		return
	}
	w.Uint32(1)
	w.Uint32(layout4FlexFiles)
}

// dsNFSAddr is where clients reach the NFSv3 service of the data server
// whose RPC address is rpcAddr.
func (s *Server) dsNFSAddr(rpcAddr string) (string, bool) {
	if a, ok := s.cfg.DataServers[rpcAddr]; ok {
		return a, true
	}
	if s.cfg.DataServerPort == 0 {
		return "", false
	}
	h, _, err := net.SplitHostPort(rpcAddr)
	if err != nil {
		return "", false
	}
	return net.JoinHostPort(h, strconv.Itoa(s.cfg.DataServerPort)), true
}

// device returns the device id of an NFSv3 data server address,
// remembering it for GETDEVICEINFO.
func (s *Server) device(addr string) [16]byte {
	var id [16]byte
	sum := sha256.Sum256([]byte(addr))
	copy(id[:], sum[:])
	s.devMu.Lock()
	s.devices[id] = addr
	s.devMu.Unlock()
	return id
}

// uaddr formats host:port as an RFC 5665 universal address.
func uaddr(addr string) (netid, ua string, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", "", err
	}
	ip := net.ParseIP(h)
	if ip == nil {
		ips, err := net.LookupIP(h)
		if err != nil || len(ips) == 0 {
			return "", "", fmt.Errorf("resolve %s: %v", h, err)
		}
		ip = ips[0]
	}
	netid = "tcp"
	s := ip.String()
	if ip.To4() == nil {
		netid = "tcp6"
	}
	return netid, fmt.Sprintf("%s.%d.%d", s, port>>8, port&0xff), nil
}

// layoutState is the layout stateid of (client, file).
func (c *compound) layoutState(ino uint64, sid stateid) (*stateRec, uint32) {
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return nil, st
	}
	sr, st := c.s.st.lookup(sid, true, kindOpen, kindLock, kindLayout)
	if st != nfs4OK {
		return nil, st
	}
	if sr.ino != ino || sr.cl != c.sess.cl {
		return nil, nfs4errBadStateid
	}
	if sr.kind == kindLayout {
		return sr, nfs4OK
	}
	st2 := c.s.st
	st2.mu.Lock()
	defer st2.mu.Unlock()
	k := ownerKey{sr.cl.id, "\x00layout", ino}
	lr := st2.lockOwner[k]
	if lr == nil {
		lr = st2.newStateRec(sr.cl, kindLayout, ino)
		lr.owner = "\x00layout"
		lr.seqid = 0
		st2.lockOwner[k] = lr
	}
	return lr, nfs4OK
}

// curLayout resolves sid to a layout state of the current file. An
// older seqid is taken (LAYOUTCOMMIT, LAYOUTERROR): the Linux client
// copies the layout stateid when it prepares a LAYOUTCOMMIT and, told
// NFS4ERR_OLD_STATEID, resends it unchanged at once, so while its other
// LAYOUTGETs move the seqid on it never gets through (a 256 MiB striped
// write looped on LAYOUTCOMMIT at ~800 calls/s and never finished); knfsd
// refuses only a seqid from the future too. For LAYOUTRETURN (ret) an
// older seqid is NFS4ERR_OLD_STATEID (pynfs FFLOOS) unless it is the last
// one the client was told: the server moved the seqid on with a recall
// the client may not have heard (fenced).
func (c *compound) curLayout(sid stateid, ret bool) (*stateRec, uint32) {
	if st := c.needFH(); st != nfs4OK {
		return nil, st
	}
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return nil, st
	}
	lr, st := c.s.st.lookup(sid, true, kindLayout)
	if st != nfs4OK {
		return nil, st
	}
	if lr.ino != c.cur {
		return nil, nfs4errBadStateid
	}
	if ret && sid.seqid != 0 {
		c.s.st.mu.Lock()
		old := sid.seqid < lr.seqid && sid.seqid != lr.told
		c.s.st.mu.Unlock()
		if old {
			return nil, nfs4errOldStateid
		}
	}
	return lr, nfs4OK
}

func (c *compound) layoutget(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Bool() // signal_layout_avail
	typ := r.Uint32()
	iomode := r.Uint32()
	off := r.Uint64()
	length := r.Uint64()
	r.Uint64() // minlength
	sid := decodeStateid(r)
	maxCount := r.Uint32()
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if typ != layout4FlexFiles {
		return nfs4errUnknownLayout
	}
	if iomode != iomodeRead && iomode != iomodeRW {
		return nfs4errBadiomode
	}
	if length == 0 {
		return nfs4errInval
	}
	if !c.s.pnfs() {
		return nfs4errLayoutunavail
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	if !a.IsFile() {
		if a.IsDir() {
			return nfs4errIsdir
		}
		return nfs4errInval
	}
	lr, st := c.layoutState(c.cur, sid)
	if st != nfs4OK {
		return st
	}
	write := iomode == iomodeRW
	c.s.st.mu.Lock()
	register := write && !lr.write
	c.s.st.mu.Unlock()
	resp, err := c.s.cl.LayoutGetIno(c.ctx, c.cur, register)
	if err != nil {
		return statusOf(err)
	}
	p, err := layout.Parse(resp.Layout.Spec)
	if err != nil {
		return nfs4errLayoutunavail
	}
	lay := layout.Layout{Width: p.Width, Unit: p.Unit, Scheme: p.Scheme, Generation: resp.Layout.Generation}
	body, segOff, segLen, targets, st := c.flexLayout(lay, resp, off, write)
	if st != nfs4OK {
		if register {
			_ = c.s.cl.LayoutReturnIno(c.ctx, c.cur, true)
		}
		return st
	}
	c.s.st.mu.Lock()
	lr.write = lr.write || register
	lr.seqid++
	lr.gen = lay.Generation
	lr.iomode |= iomode
	lr.fenced = false
	if lr.targets == nil {
		lr.targets = map[fenceTarget]bool{}
	}
	for _, t := range targets {
		lr.targets[t] = true
	}
	lr.told = lr.seqid
	id := lr.id()
	c.s.st.mu.Unlock()
	start := w.Len()
	w.Bool(true) // return on close
	encodeStateid(w, id)
	w.Uint32(1)
	w.Uint64(segOff)
	w.Uint64(segLen)
	w.Uint32(iomode)
	w.Uint32(layout4FlexFiles)
	w.Opaque(body)
	if maxCount > 0 && uint32(w.Len()-start) > maxCount {
		w.Truncate(start)
		return nfs4errToosmall
	}
	c.setCurSid(id)
	return nfs4OK
}

// flexLayout encodes ff_layout4 for the layout segment holding file
// offset off, and returns the segment and the components it names.
func (c *compound) flexLayout(lay layout.Layout, resp *rpc.LayoutGetResp, off uint64, write bool) ([]byte, uint64, uint64, []fenceTarget, uint32) {
	copies := 1
	switch lay.Scheme.Kind {
	case layout.KindNone:
	case layout.KindMirror:
		copies = lay.Scheme.N
	default:
		return nil, 0, 0, nil, nfs4errLayoutunavail
	}
	if len(resp.Layout.Addrs) != lay.Width*copies || len(resp.Layout.Targets) != len(resp.Layout.Addrs) {
		return nil, 0, 0, nil, nfs4errLayoutunavail
	}
	segOff, segLen := uint64(0), lengthAll
	col := 0
	if lay.Width > 1 {
		unit := uint64(lay.Unit)
		su := off / unit
		segOff, segLen = su*unit, unit
		col = int(su % uint64(lay.Width))
	}
	stale := map[uint32]bool{}
	for _, s := range resp.Stale {
		stale[s] = true
	}
	uid := ds3.SynthUID(c.s.epoch(resp.Attr.Ino), write)
	var targets []fenceTarget
	w := xdr.NewWriter(nil)
	w.Uint64(0) // stripe unit: one data server per mirror
	mirrors := w.Reserve()
	n := 0
	for r := range copies {
		comp := lay.MirrorComponent(col, r)
		if stale[uint32(comp)] {
			continue
		}
		addr, ok := c.s.dsNFSAddr(resp.Layout.Addrs[comp])
		if !ok {
			return nil, 0, 0, nil, nfs4errLayoutunavail
		}
		dev := c.s.device(addr)
		h := ds3.Handle{Ino: resp.Attr.Ino, Gen: lay.Generation, Comp: uint32(comp), Col: uint32(col), Width: uint32(lay.Width), Unit: uint64(lay.Unit)}
		if fa, ok := c.s.cfg.FenceAddrs[resp.Layout.Addrs[comp]]; ok {
			addr = fa
		}
		targets = append(targets, fenceTarget{addr: addr, key: ds3.FenceKey{Ino: h.Ino, Gen: h.Gen, Comp: h.Comp}, dev: dev, ds: resp.Layout.Targets[comp]})
		w.Uint32(1) // one data server in this mirror
		w.Fixed(dev[:])
		w.Uint32(1) // efficiency
		w.Uint32(0) // stateid: anonymous (loosely coupled)
		w.Fixed(make([]byte, 12))
		w.Uint32(1)
		w.Opaque(h.Encode(c.s.cfg.HandleKey))
		w.String(strconv.FormatUint(uint64(uid), 10))
		w.String(strconv.FormatUint(uint64(ds3.GID), 10))
		n++
	}
	if n == 0 {
		return nil, 0, 0, nil, nfs4errLayoutunavail
	}
	w.PutUint32At(mirrors, uint32(n))
	w.Uint32(0) // flags: I/O through the MDS allowed when a data server fails
	w.Uint32(0) // stats collect hint
	return w.Bytes(), segOff, segLen, targets, nfs4OK
}

func (c *compound) getdeviceinfo(r *xdr.Reader, w *xdr.Writer) uint32 {
	var dev [16]byte
	copy(dev[:], r.Fixed(16))
	typ := r.Uint32()
	maxCount := r.Uint32()
	r.Bitmap(8)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if typ != layout4FlexFiles {
		return nfs4errUnknownLayout
	}
	c.s.devMu.Lock()
	addr, ok := c.s.devices[dev]
	c.s.devMu.Unlock()
	if !ok {
		return nfs4errNoent
	}
	netid, ua, err := uaddr(addr)
	if err != nil {
		return nfs4errNoent
	}
	b := xdr.NewWriter(nil)
	b.Uint32(1)
	b.String(netid)
	b.String(ua)
	b.Uint32(1)
	b.Uint32(3) // NFSv3
	b.Uint32(0)
	b.Uint32(uint32(c.s.cfg.MaxIO))
	b.Uint32(uint32(c.s.cfg.MaxIO))
	b.Bool(false) // loosely coupled
	need := uint32(b.Len() + 12)
	if maxCount > 0 && maxCount < need {
		w.Uint32(need)
		return nfs4errToosmall
	}
	w.Uint32(layout4FlexFiles)
	w.Opaque(b.Bytes())
	w.Bitmap(nil)
	return nfs4OK
}

// deviceError is one error a client reports against a data server.
type deviceError struct {
	dev    [16]byte
	status uint32
	op     uint32
}

func decodeDeviceErrors(r *xdr.Reader) []deviceError {
	n := r.Count(64, 24)
	out := make([]deviceError, 0, n)
	for range n {
		var e deviceError
		copy(e.dev[:], r.Fixed(16))
		e.status = r.Uint32()
		e.op = r.Uint32()
		out = append(out, e)
	}
	return out
}

// reportErrors sends the data server errors a client reported against
// the layouts of lr to the MDS as a LAYOUTERROR: the components of the
// devices named (those lr's layouts of its generation put there) become
// stale and are rebuilt.
func (c *compound) reportErrors(lr *stateRec, errs []deviceError) uint32 {
	var ce []rpc.ComponentError
	c.s.st.mu.Lock()
	ino, gen, write := lr.ino, lr.gen, lr.write
	for _, e := range errs {
		switch e.status {
		case nfs4errPerm, nfs4errAccess, nfs4errStale, nfs4errBadhandle:
			// A fenced identity or a replaced generation: the layout
			// is out of date, the data server is fine.
			continue
		}
		op := "read"
		if e.op == opWrite || e.op == opCommit {
			op = "write"
		}
		for t := range lr.targets {
			if t.dev == e.dev && t.key.Gen == gen {
				ce = append(ce, rpc.ComponentError{Comp: t.key.Comp, DS: t.ds, Op: op, Errno: uint32(syscall.EIO)})
			}
		}
	}
	c.s.st.mu.Unlock()
	if len(ce) == 0 {
		return nfs4OK
	}
	if _, err := c.s.cl.LayoutErrorIno(c.ctx, rpc.LayoutErrorReq{Ino: ino, Gen: gen, Write: write, Errors: ce}); err != nil {
		c.s.log.Warn("nfs_layouterror_refused", "inode", ino, "err", err)
	}
	return nfs4OK
}

func (c *compound) layoutreturn(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Bool() // reclaim
	typ := r.Uint32()
	r.Uint32() // iomode
	kind := r.Uint32()
	var off, length uint64
	var sid stateid
	var body []byte
	if kind == layoutreturnFile {
		off = r.Uint64()
		length = r.Uint64()
		sid = decodeStateid(r)
		body = r.Opaque(64 << 10)
	}
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if typ != layout4FlexFiles {
		return nfs4errUnknownLayout
	}
	if kind != layoutreturnFile {
		c.s.st.mu.Lock()
		var recs []*stateRec
		for _, sr := range c.sess.cl.states {
			if sr.kind == kindLayout {
				recs = append(recs, sr)
			}
		}
		for _, sr := range recs {
			c.s.st.dropStateRec(sr)
		}
		c.s.st.mu.Unlock()
		for _, sr := range recs {
			c.s.releaseState(sr)
		}
		return nfs4OK
	}
	// A client that missed a recall (fenced) returns the layout with the
	// stateid it was last told.
	lr, st := c.curLayout(sid, true)
	if st != nfs4OK {
		return st
	}
	// ff_layoutreturn4: the I/O errors, then statistics (ignored)
	br := xdr.NewReader(body)
	var errs []deviceError
	for range br.Count(64, 40) {
		br.Uint64()
		br.Uint64()
		decodeStateid(br)
		errs = append(errs, decodeDeviceErrors(br)...)
	}
	if br.Err() == nil {
		c.reportErrors(lr, errs)
	}
	if off == 0 && length == lengthAll {
		c.s.st.mu.Lock()
		c.s.st.dropStateRec(lr)
		c.s.st.remember(lr)
		c.s.st.mu.Unlock()
		c.s.releaseState(lr)
		w.Bool(false)
		return nfs4OK
	}
	c.s.st.mu.Lock()
	lr.seqid++
	lr.told = lr.seqid
	id := lr.id()
	c.s.st.mu.Unlock()
	w.Bool(true)
	encodeStateid(w, id)
	return nfs4OK
}

func (c *compound) layoutcommit(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint64()
	r.Uint64()
	r.Bool()
	sid := decodeStateid(r)
	var last uint64
	hasLast := r.Bool()
	if hasLast {
		last = r.Uint64()
	}
	mtime := time.Now().UnixNano()
	if r.Bool() {
		sec := r.Int64()
		nsec := r.Uint32()
		mtime = sec*1e9 + int64(nsec)
	}
	r.Uint32()
	r.Opaque(64 << 10)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	var gen uint64
	if lr, st := c.curLayout(sid, false); st == nfs4OK {
		gen = lr.gen
	} else if rl, ok := c.s.st.returnedLayout(c.sess.cl, sid, c.cur); ok {
		// The Linux client may send LAYOUTCOMMIT and LAYOUTRETURN of
		// the layout at once, and the return be done first (after a
		// data server failed): the bytes written under the layout must
		// still get their size, or the client's fsync fails with EIO.
		gen = rl.gen
	} else {
		return st
	}
	end := uint64(0)
	if hasLast {
		end = last + 1
		// The kernel client wrote only some components: the others must
		// hold their shares of the new size before it is published, or
		// readers take their holes for lost bytes (client/missing.go).
		if err := c.s.cl.GrowIno(c.ctx, c.cur, end); err != nil {
			return statusOf(err)
		}
	}
	a, err := c.s.cl.LayoutCommitIno(c.ctx, c.cur, gen, end, mtime)
	if err != nil {
		return statusOf(err)
	}
	w.Bool(true)
	w.Uint64(a.Size)
	return nfs4OK
}

func (c *compound) layouterror(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint64()
	r.Uint64()
	sid := decodeStateid(r)
	errs := decodeDeviceErrors(r)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	lr, st := c.curLayout(sid, false)
	if st != nfs4OK {
		return st
	}
	return c.reportErrors(lr, errs)
}

func (c *compound) layoutstats(r *xdr.Reader, w *xdr.Writer) uint32 {
	r.Uint64()
	r.Uint64()
	sid := decodeStateid(r)
	for range 2 {
		r.Uint64()
		r.Uint64()
	}
	r.Fixed(16)
	r.Uint32()
	r.Opaque(64 << 10)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	sid, st := c.resolve(sid)
	if st != nfs4OK {
		return st
	}
	if _, st := c.s.st.lookup(sid, true, kindLayout, kindOpen); st != nfs4OK {
		return st // an older seqid is taken, as by LAYOUTCOMMIT (curLayout)
	}
	return nfs4OK
}
