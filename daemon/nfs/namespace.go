package nfs

import (
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// This file holds the namespace operations: file handles, LOOKUP,
// GETATTR/SETATTR, CREATE, REMOVE, RENAME, LINK, READLINK, READDIR.

// attr returns the attributes of ino as a client should see them: the
// MDS's, with the size and change of writes this front end holds open.
func (c *compound) attr(ino uint64) (*rpc.Attr, uint32) {
	a, err := c.s.cl.Getattr(c.ctx, ino)
	if err != nil {
		if rpc.ToErrno(err) == syscall.ENOENT {
			return nil, nfs4errStale
		}
		return nil, statusOf(err)
	}
	if a.IsFile() {
		c.s.files.merge(a)
	}
	return a, nfs4OK
}

// writesOf is the count of writes the front end holds open on ino.
func (c *compound) writesOf(ino uint64) uint64 { return c.s.files.writes(ino) }

// checkName validates a component4.
func checkName(name string) uint32 {
	switch {
	case name == "":
		return nfs4errInval
	case len(name) > maxName:
		return nfs4errNametoolong
	case !utf8.ValidString(name):
		return nfs4errInval
	case name == "." || name == "..":
		return nfs4errBadname
	case strings.ContainsAny(name, "/\x00"):
		return nfs4errBadchar
	}
	return nfs4OK
}

func (c *compound) lookupName(dir uint64, name string) (*rpc.Attr, uint32) {
	if st := checkName(name); st != nfs4OK {
		return nil, st
	}
	d, st := c.attr(dir)
	if st != nfs4OK {
		return nil, st
	}
	switch {
	case d.IsSymlink():
		return nil, nfs4errSymlink
	case !d.IsDir():
		return nil, nfs4errNotdir
	case !c.may(d, permX):
		return nil, nfs4errAccess
	}
	a, err := c.s.cl.Lookup(c.ctx, dir, name)
	if err != nil {
		return nil, statusOf(err)
	}
	if a.IsDir() {
		c.s.cookie.setParent(a.Ino, dir)
	}
	return a, nfs4OK
}

func (c *compound) putrootfh(r *xdr.Reader, w *xdr.Writer) uint32 {
	ino, err := c.s.exportIno(c.ctx, c.exp.Path)
	if err != nil {
		return statusOf(err)
	}
	c.cur = ino
	c.haveCurSid = false
	return nfs4OK
}

// exportRoot is the inode the client sees as the root (0 if unknown).
func (c *compound) exportRoot() uint64 {
	ino, err := c.s.exportIno(c.ctx, c.exp.Path)
	if err != nil {
		return 0
	}
	return ino
}

func (c *compound) putfh(r *xdr.Reader, w *xdr.Writer) uint32 {
	fh := r.Opaque(maxFHLen)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	ino, ok := c.s.fh.decode(fh)
	if !ok {
		return nfs4errBadhandle
	}
	c.cur = ino
	c.haveCurSid = false
	return nfs4OK
}

func (c *compound) getfh(r *xdr.Reader, w *xdr.Writer) uint32 {
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if _, st := c.attr(c.cur); st != nfs4OK {
		return st
	}
	w.Opaque(c.s.fh.encode(c.cur))
	return nfs4OK
}

func (c *compound) savefh(r *xdr.Reader, w *xdr.Writer) uint32 {
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	c.saved = c.cur
	c.savedSid, c.haveSavSid = c.curSid, c.haveCurSid
	return nfs4OK
}

func (c *compound) restorefh(r *xdr.Reader, w *xdr.Writer) uint32 {
	if c.saved == 0 {
		return nfs4errRestorefh
	}
	c.cur = c.saved
	c.curSid, c.haveCurSid = c.savedSid, c.haveSavSid
	return nfs4OK
}

func (c *compound) lookup(r *xdr.Reader, w *xdr.Writer) uint32 {
	name := r.String(maxOpaque)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	a, st := c.lookupName(c.cur, name)
	if st != nfs4OK {
		return st
	}
	c.cur = a.Ino
	return nfs4OK
}

func (c *compound) lookupp(r *xdr.Reader, w *xdr.Writer) uint32 {
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	if a.IsSymlink() {
		return nfs4errSymlink
	}
	if !a.IsDir() {
		return nfs4errNotdir
	}
	if c.cur == c.exportRoot() {
		return nfs4errNoent
	}
	p, ok := c.s.cookie.parent(c.cur)
	if !ok {
		return nfs4errNoent
	}
	c.cur = p
	return nfs4OK
}

func (c *compound) getattr(r *xdr.Reader, w *xdr.Writer) uint32 {
	req := r.Bitmap(8)
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
	c.encodeAttrs(w, a, c.writesOf(a.Ino), req, c.statfs)
	return nfs4OK
}

// statfs returns the namespace's capacity (cached for the compound).
func (c *compound) statfs() *rpc.StatFSResp {
	st, err := c.s.cl.StatFS(c.ctx)
	if err != nil {
		return &rpc.StatFSResp{}
	}
	return st
}

// sizeable returns the current file's attributes if the caller may change
// its size: a regular file it may write, or holds open for writing (open
// stateid sid). The export must be writable.
func (c *compound) sizeable(sid stateid) (*rpc.Attr, uint32) {
	if st := c.needFH(); st != nfs4OK {
		return nil, st
	}
	if st := c.writable(); st != nfs4OK {
		return nil, st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return nil, st
	}
	if a.IsDir() {
		return nil, nfs4errIsdir
	}
	if !a.IsFile() {
		return nil, nfs4errInval
	}
	if !c.may(a, permW) {
		if sr, st := c.s.st.lookupState(sid, kindOpen); st != nfs4OK || sr.access&shareAccessWrite == 0 {
			return nil, nfs4errAccess
		}
	}
	return a, nfs4OK
}

func (c *compound) setattr(r *xdr.Reader, w *xdr.Writer) uint32 {
	sid := decodeStateid(r)
	sa, st := decodeSetAttrs(r)
	if st == nfs4errBadxdr || r.Err() != nil {
		return nfs4errBadxdr
	}
	w.Bitmap(nil)
	at := w.Len()
	if st != nfs4OK {
		return st
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	if st := c.writable(); st != nfs4OK {
		return st
	}
	var a *rpc.Attr
	if sa.req.Valid&rpc.SetSize != 0 {
		a, st = c.sizeable(sid)
	} else {
		a, st = c.attr(c.cur)
	}
	if st != nfs4OK {
		return st
	}
	owner := a.Uid == c.cred.Uid || c.cred.Uid == 0
	if sa.req.Valid&(rpc.SetMode|rpc.SetAtime|rpc.SetMtime) != 0 && !owner {
		return nfs4errPerm
	}
	if sa.req.Valid&(rpc.SetUid) != 0 && c.cred.Uid != 0 && sa.req.Uid != a.Uid {
		return nfs4errPerm
	}
	if sa.req.Valid&rpc.SetGid != 0 && c.cred.Uid != 0 && (!owner || !c.inGroup(sa.req.Gid)) {
		return nfs4errPerm
	}
	if sa.req.Valid&rpc.SetSize != 0 {
		if sa.req.Size < a.Size {
			c.s.recallBefore(c.ctx, c.cur, c.sess.cl) // a cut
		}
		if err := c.s.files.truncate(c.ctx, c.cur, int64(sa.req.Size)); err != nil {
			return statusOf(err)
		}
		sa.req.Valid &^= rpc.SetSize
	}
	if sa.req.Valid != 0 {
		if _, err := c.s.cl.Setattr(c.ctx, c.cur, sa.req); err != nil {
			return statusOf(err)
		}
	}
	w.Truncate(at - 4)
	w.Bitmap(sa.mask)
	return nfs4OK
}

// changeInfo writes change_info4 for a directory changed by an operation.
func changeInfo(w *xdr.Writer, before, after *rpc.Attr) {
	w.Bool(false)
	if before == nil || after == nil {
		w.Uint64(0)
		w.Uint64(0)
		return
	}
	w.Uint64(changeOf(before, 0))
	w.Uint64(changeOf(after, 0))
}

func (c *compound) create(r *xdr.Reader, w *xdr.Writer) uint32 {
	typ := r.Uint32()
	var target string
	var rdev uint32
	switch typ {
	case nf4Lnk:
		target = r.String(4096)
	case nf4Blk, nf4Chr:
		major, minor := r.Uint32(), r.Uint32()
		if major > 0xfff || minor > 0xfffff {
			return nfs4errInval // beyond Linux's 12-bit major and 20-bit minor
		}
		rdev = rpc.Mkdev(major, minor)
	}
	name := r.String(maxOpaque)
	sa, st := decodeSetAttrs(r)
	if st == nfs4errBadxdr || r.Err() != nil {
		return nfs4errBadxdr
	}
	if st != nfs4OK {
		return st
	}
	if s := c.needFH(); s != nfs4OK {
		return s
	}
	special := map[uint32]uint32{nf4Blk: rpc.TypeBlock, nf4Chr: rpc.TypeChar, nf4Sock: rpc.TypeSocket, nf4Fifo: rpc.TypeFifo}
	if _, ok := special[typ]; !ok && typ != nf4Lnk && typ != nf4Dir {
		return nfs4errBadtype // NF4REG is OPEN's; named attributes are not served
	}
	if st := checkName(name); st != nfs4OK {
		return st
	}
	if st := c.mayModifyDir(c.cur); st != nfs4OK {
		return st
	}
	before, _ := c.attr(c.cur)
	mode := uint32(0o777)
	if sa.req.Valid&rpc.SetMode != 0 {
		mode = sa.req.Mode
	}
	var a *rpc.Attr
	var err error
	switch typ {
	case nf4Dir:
		a, err = c.s.cl.MkdirIno(c.ctx, c.cur, name, mode, c.cred)
	case nf4Lnk:
		if target == "" {
			return nfs4errInval
		}
		a, err = c.s.cl.SymlinkIno(c.ctx, c.cur, name, target, c.cred)
	default:
		a, err = c.s.cl.MknodIno(c.ctx, c.cur, name, special[typ]|mode&0o7777, rdev, c.cred)
	}
	if err != nil {
		return statusOf(err)
	}
	if typ == nf4Dir {
		c.s.cookie.setParent(a.Ino, c.cur)
	}
	after, _ := c.attr(c.cur)
	changeInfo(w, before, after)
	set := sa.mask
	if typ == nf4Lnk {
		set = nil
	}
	w.Bitmap(set)
	c.cur = a.Ino
	return nfs4OK
}

func (c *compound) remove(r *xdr.Reader, w *xdr.Writer) uint32 {
	name := r.String(maxOpaque)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	e, st := c.lookupName(c.cur, name)
	if st != nfs4OK {
		return st
	}
	if st := c.mayModifyDir(c.cur); st != nfs4OK {
		return st
	}
	before, _ := c.attr(c.cur)
	var err error
	if e.IsDir() {
		err = c.s.cl.RmdirIno(c.ctx, c.cur, name)
	} else {
		err = c.s.cl.UnlinkIno(c.ctx, c.cur, name)
	}
	if err != nil {
		return statusOf(err)
	}
	after, _ := c.attr(c.cur)
	changeInfo(w, before, after)
	return nfs4OK
}

func (c *compound) rename(r *xdr.Reader, w *xdr.Writer) uint32 {
	oldName := r.String(maxOpaque)
	newName := r.String(maxOpaque)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if c.cur == 0 || c.saved == 0 {
		return nfs4errNofilehandle
	}
	if st := checkName(oldName); st != nfs4OK {
		return st
	}
	if st := checkName(newName); st != nfs4OK {
		return st
	}
	for _, d := range []uint64{c.saved, c.cur} {
		if st := c.mayModifyDir(d); st != nfs4OK {
			return st
		}
	}
	sb, _ := c.attr(c.saved)
	tb, _ := c.attr(c.cur)
	if err := c.s.cl.RenameIno(c.ctx, c.saved, oldName, c.cur, newName, 0); err != nil {
		return statusOf(err)
	}
	sa, _ := c.attr(c.saved)
	ta, _ := c.attr(c.cur)
	changeInfo(w, sb, sa)
	changeInfo(w, tb, ta)
	return nfs4OK
}

func (c *compound) link(r *xdr.Reader, w *xdr.Writer) uint32 {
	name := r.String(maxOpaque)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if c.cur == 0 || c.saved == 0 {
		return nfs4errNofilehandle
	}
	if st := checkName(name); st != nfs4OK {
		return st
	}
	src, st := c.attr(c.saved)
	if st != nfs4OK {
		return st
	}
	if src.IsDir() {
		return nfs4errIsdir
	}
	if st := c.mayModifyDir(c.cur); st != nfs4OK {
		return st
	}
	before, _ := c.attr(c.cur)
	if _, err := c.s.cl.LinkIno(c.ctx, c.saved, c.cur, name); err != nil {
		return statusOf(err)
	}
	after, _ := c.attr(c.cur)
	changeInfo(w, before, after)
	return nfs4OK
}

func (c *compound) readlink(r *xdr.Reader, w *xdr.Writer) uint32 {
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	if !a.IsSymlink() {
		return nfs4errInval
	}
	t, err := c.s.cl.ReadlinkIno(c.ctx, c.cur)
	if err != nil {
		return statusOf(err)
	}
	w.String(t)
	return nfs4OK
}

func (c *compound) readdir(r *xdr.Reader, w *xdr.Writer) uint32 {
	cookie := r.Uint64()
	r.Fixed(8)
	r.Uint32() // dircount: a hint
	maxCount := r.Uint32()
	req := r.Bitmap(8)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	d, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	if !d.IsDir() {
		return nfs4errNotdir
	}
	if !c.may(d, permR) {
		return nfs4errAccess
	}
	after := ""
	switch {
	case cookie == 1 || cookie == 2:
		return nfs4errBadCookie
	case cookie > 2:
		name, ok := c.s.cookie.name(c.cur, cookie)
		if !ok {
			return nfs4errBadCookie
		}
		after = name
	}
	limit := int(min(maxCount, uint32(c.s.cfg.MaxIO)))
	start := w.Len()
	w.Uint64(0) // cookie verifier
	n, eof := 0, false
	for {
		ents, more, err := c.s.cl.ReadDirPage(c.ctx, c.cur, after, 256)
		if err != nil {
			w.Truncate(start)
			return statusOf(err)
		}
		full := false
		for i := range ents {
			e := &ents[i]
			if e.Name == "." || e.Name == ".." {
				after = e.Name
				continue
			}
			mark := w.Len()
			w.Bool(true)
			w.Uint64(c.s.cookie.add(c.cur, e.Name))
			w.String(e.Name)
			if e.Attr.IsFile() {
				c.s.files.merge(&e.Attr)
			} else if e.Attr.IsDir() {
				c.s.cookie.setParent(e.Attr.Ino, c.cur)
			}
			c.encodeAttrs(w, &e.Attr, c.writesOf(e.Attr.Ino), req, c.statfs)
			if w.Len()-start+16 > limit {
				w.Truncate(mark)
				full = true
				break
			}
			n++
			after = e.Name
		}
		if full {
			break
		}
		if !more {
			eof = true
			break
		}
	}
	if n == 0 && !eof {
		w.Truncate(start)
		return nfs4errToosmall
	}
	w.Bool(false)
	w.Bool(eof)
	return nfs4OK
}

func (c *compound) verify(r *xdr.Reader, w *xdr.Writer) uint32  { return c.verifyAttrs(r, true) }
func (c *compound) nverify(r *xdr.Reader, w *xdr.Writer) uint32 { return c.verifyAttrs(r, false) }

// verifyAttrs compares the given fattr4 with the current file's
// attributes, encoded the same way.
func (c *compound) verifyAttrs(r *xdr.Reader, same bool) uint32 {
	mask := r.Bitmap(8)
	body := r.Opaque(64 << 10)
	if r.Err() != nil {
		return nfs4errBadxdr
	}
	if st := c.needFH(); st != nfs4OK {
		return st
	}
	for i, v := range mask {
		if i >= len(supported) && v != 0 || i < len(supported) && v&^supported[i] != 0 {
			return nfs4errAttrnotsupp
		}
	}
	if has(mask, aRdattrError) {
		return nfs4errInval
	}
	a, st := c.attr(c.cur)
	if st != nfs4OK {
		return st
	}
	mine := xdr.NewWriter(nil)
	c.encodeAttrs(mine, a, c.writesOf(a.Ino), mask, c.statfs)
	mr := xdr.NewReader(mine.Bytes())
	mr.Bitmap(8)
	equal := string(mr.Opaque(64<<10)) == string(body)
	switch {
	case same && !equal:
		return nfs4errNotSame
	case !same && equal:
		return nfs4errSame
	}
	return nfs4OK
}
