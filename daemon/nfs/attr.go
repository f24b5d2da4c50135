package nfs

import (
	"strconv"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
)

// Attribute numbers (fattr4, RFC 8881 section 5).
const (
	aSupported      = 0
	aType           = 1
	aFhExpireType   = 2
	aChange         = 3
	aSize           = 4
	aLinkSupport    = 5
	aSymlinkSupport = 6
	aNamedAttr      = 7
	aFsid           = 8
	aUniqueHandles  = 9
	aLeaseTime      = 10
	aRdattrError    = 11
	aAclSupport     = 13
	aCansettime     = 15
	aCaseInsens     = 16
	aCasePreserving = 17
	aChownRestrict  = 18
	aFilehandle     = 19
	aFileid         = 20
	aFilesAvail     = 21
	aFilesFree      = 22
	aFilesTotal     = 23
	aHomogeneous    = 26
	aMaxfilesize    = 27
	aMaxlink        = 28
	aMaxname        = 29
	aMaxread        = 30
	aMaxwrite       = 31
	aMode           = 33
	aNoTrunc        = 34
	aNumlinks       = 35
	aOwner          = 36
	aOwnerGroup     = 37
	aRawdev         = 41
	aSpaceAvail     = 42
	aSpaceFree      = 43
	aSpaceTotal     = 44
	aSpaceUsed      = 45
	aTimeAccess     = 47
	aTimeAccessSet  = 48
	aTimeDelta      = 51
	aTimeMetadata   = 52
	aTimeModify     = 53
	aTimeModifySet  = 54
	aMountedOnFid   = 55
	aFsLayoutType   = 62
	aLayoutBlksize  = 65
	aSuppattrExcl   = 75
	nAttrWords      = 3
	maxName         = 255
)

// supported is the bitmap of the attributes this server knows.
var supported = bitmapOf(aSupported, aType, aFhExpireType, aChange, aSize, aLinkSupport, aSymlinkSupport,
	aNamedAttr, aFsid, aUniqueHandles, aLeaseTime, aRdattrError, aAclSupport, aCansettime, aCaseInsens,
	aCasePreserving, aChownRestrict, aFilehandle, aFileid, aFilesAvail, aFilesFree, aFilesTotal,
	aHomogeneous, aMaxfilesize, aMaxlink, aMaxname, aMaxread, aMaxwrite, aMode, aNoTrunc, aNumlinks,
	aOwner, aOwnerGroup, aRawdev, aSpaceAvail, aSpaceFree, aSpaceTotal, aSpaceUsed, aTimeAccess,
	aTimeAccessSet, aTimeDelta, aTimeMetadata, aTimeModify, aTimeModifySet, aMountedOnFid,
	aFsLayoutType, aLayoutBlksize, aSuppattrExcl, aXattrSupport)

// settable is what SETATTR (and the create attributes) may change.
var settable = bitmapOf(aSize, aMode, aOwner, aOwnerGroup, aTimeAccessSet, aTimeModifySet)

func bitmapOf(bits ...int) []uint32 {
	w := make([]uint32, nAttrWords)
	for _, b := range bits {
		w[b/32] |= 1 << (b % 32)
	}
	return w
}

func has(bm []uint32, bit int) bool {
	return bit/32 < len(bm) && bm[bit/32]&(1<<(bit%32)) != 0
}

// fsInfo is what the file-system-wide attributes need.
type fsInfo struct {
	stat *rpc.StatFSResp
}

func nfsType(a *rpc.Attr) uint32 {
	switch a.Mode & rpc.TypeMask {
	case rpc.TypeDir:
		return nf4Dir
	case rpc.TypeSymlink:
		return nf4Lnk
	case rpc.TypeFifo:
		return nf4Fifo
	case rpc.TypeChar:
		return nf4Chr
	case rpc.TypeBlock:
		return nf4Blk
	case rpc.TypeSocket:
		return nf4Sock
	}
	return nf4Reg
}

// changeOf is the change attribute: the later of ctime and mtime in
// nanoseconds, plus the writes this front end made since (they are not
// in the MDS's times until committed).
func changeOf(a *rpc.Attr, writes uint64) uint64 {
	return uint64(max(a.Mtime, a.Ctime)) + writes
}

func putTime(w *xdr.Writer, ns int64) {
	t := time.Unix(0, ns)
	w.Int64(t.Unix())
	w.Uint32(uint32(t.Nanosecond()))
}

// encodeAttrs writes fattr4 for the attributes in req that the server
// supports.
func (c *compound) encodeAttrs(w *xdr.Writer, a *rpc.Attr, writes uint64, req []uint32, fs func() *rpc.StatFSResp) {
	var out [nAttrWords]uint32
	for i := range min(len(req), nAttrWords) {
		out[i] = req[i] & supported[i]
	}
	w.Bitmap(out[:])
	lenAt := w.Reserve()
	start := w.Len()
	for bit := 0; bit < 32*nAttrWords; bit++ {
		if out[bit/32]&(1<<(bit%32)) == 0 {
			continue
		}
		switch bit {
		case aSupported:
			w.Bitmap(supported)
		case aType:
			w.Uint32(nfsType(a))
		case aFhExpireType:
			w.Uint32(0) // FH4_PERSISTENT
		case aChange:
			w.Uint64(changeOf(a, writes))
		case aSize:
			w.Uint64(a.Size)
		case aLinkSupport, aSymlinkSupport, aUniqueHandles, aCansettime, aCasePreserving,
			aChownRestrict, aHomogeneous, aNoTrunc:
			w.Bool(true)
		case aNamedAttr, aCaseInsens:
			w.Bool(false)
		case aFsid:
			w.Uint64(0x5354524154410000) // "STRATA"
			w.Uint64(1)
		case aLeaseTime:
			w.Uint32(uint32(c.s.cfg.Lease / time.Second))
		case aRdattrError:
			w.Uint32(nfs4OK)
		case aAclSupport:
			w.Uint32(0)
		case aFilehandle:
			w.Opaque(c.s.fh.encode(a.Ino))
		case aFileid, aMountedOnFid:
			w.Uint64(a.Ino)
		case aFilesAvail, aFilesFree:
			w.Uint64(1 << 40)
		case aFilesTotal:
			w.Uint64(1<<40 + fs().Files)
		case aMaxfilesize:
			w.Uint64(1 << 62)
		case aMaxlink:
			w.Uint32(1 << 16)
		case aMaxname:
			w.Uint32(maxName)
		case aMaxread, aMaxwrite:
			w.Uint64(uint64(c.s.cfg.MaxIO))
		case aMode:
			w.Uint32(a.Mode & 0o7777)
		case aNumlinks:
			w.Uint32(a.Nlink)
		case aOwner:
			w.String(strconv.FormatUint(uint64(a.Uid), 10))
		case aOwnerGroup:
			w.String(strconv.FormatUint(uint64(a.Gid), 10))
		case aRawdev:
			w.Uint32(rpc.Major(a.Rdev))
			w.Uint32(rpc.Minor(a.Rdev))
		case aSpaceAvail, aSpaceFree:
			w.Uint64(fs().Free)
		case aSpaceTotal:
			w.Uint64(fs().Capacity)
		case aSpaceUsed:
			w.Uint64((a.Size + 4095) &^ 4095)
		case aTimeAccess:
			putTime(w, a.Atime)
		case aTimeDelta:
			w.Int64(0)
			w.Uint32(1)
		case aTimeMetadata:
			putTime(w, a.Ctime)
		case aTimeModify:
			putTime(w, a.Mtime)
		case aFsLayoutType:
			c.s.layoutTypes(w)
		case aLayoutBlksize:
			w.Uint32(1 << 20)
		case aSuppattrExcl:
			w.Bitmap(settable)
		case aXattrSupport:
			w.Bool(true)
		}
	}
	w.PutUint32At(lenAt, uint32(w.Len()-start))
}

// setAttrs is a decoded fattr4 of settable attributes.
type setAttrs struct {
	mask  []uint32
	req   rpc.SetattrReq
	mode  uint32
	owner bool
}

// decodeSetAttrs decodes fattr4 for SETATTR and creation. It returns
// NFS4ERR_ATTRNOTSUPP or NFS4ERR_INVAL for attributes it cannot set.
func decodeSetAttrs(r *xdr.Reader) (setAttrs, uint32) {
	var sa setAttrs
	sa.mask = r.Bitmap(8)
	body := r.Opaque(64 << 10)
	if r.Err() != nil {
		return sa, nfs4errBadxdr
	}
	for i, v := range sa.mask {
		var s uint32
		if i < len(settable) {
			s = settable[i]
		}
		if v&^s != 0 {
			if i < len(supported) && v&^supported[i] == 0 {
				return sa, nfs4errInval // a read-only attribute
			}
			return sa, nfs4errAttrnotsupp
		}
	}
	b := xdr.NewReader(body)
	if has(sa.mask, aSize) {
		sa.req.Valid |= rpc.SetSize
		sa.req.Size = b.Uint64()
	}
	if has(sa.mask, aMode) {
		sa.req.Valid |= rpc.SetMode
		sa.req.Mode = b.Uint32() & 0o7777
	}
	if has(sa.mask, aOwner) {
		n, err := strconv.ParseUint(b.String(maxOpaque), 10, 32)
		if err != nil {
			return sa, nfs4errBadowner
		}
		sa.req.Valid |= rpc.SetUid
		sa.req.Uid = uint32(n)
	}
	if has(sa.mask, aOwnerGroup) {
		n, err := strconv.ParseUint(b.String(maxOpaque), 10, 32)
		if err != nil {
			return sa, nfs4errBadowner
		}
		sa.req.Valid |= rpc.SetGid
		sa.req.Gid = uint32(n)
	}
	for _, t := range []struct {
		bit  int
		flag uint32
		dst  *int64
	}{{aTimeAccessSet, rpc.SetAtime, &sa.req.Atime}, {aTimeModifySet, rpc.SetMtime, &sa.req.Mtime}} {
		if !has(sa.mask, t.bit) {
			continue
		}
		sa.req.Valid |= t.flag
		if b.Uint32() == 1 { // SET_TO_CLIENT_TIME4
			sec := b.Int64()
			nsec := b.Uint32()
			if nsec >= 1e9 {
				return sa, nfs4errInval
			}
			*t.dst = sec*1e9 + int64(nsec)
		} else {
			*t.dst = time.Now().UnixNano()
		}
	}
	if b.Err() != nil {
		return sa, nfs4errBadxdr
	}
	return sa, nfs4OK
}
