package nfs_test

import (
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const (
	opGetxattr    = 72
	opSetxattr    = 73
	opListxattrs  = 74
	opRemovexattr = 75

	nfs4errExist   = 17
	nfs4errNoxattr = 10095
)

// TestXattrs: the NFSv4.2 extended attribute operations (RFC 8276) act on
// the user namespace of the MDS's xattrs: what SETXATTR sets the client
// library reads as user.KEY; SETXATTR's create and replace options,
// GETXATTR and REMOVEXATTR of a missing key answer as the RFC says;
// LISTXATTRS lists the keys set, not the layout, which GETXATTR still
// reads as strata.layout; a 4.1 compound may not hold them.
func TestXattrs(t *testing.T) {
	cl := testcluster.Start(t, 1, testcluster.WithDefaultLayout("width=1,unit=1M,scheme=none"))
	front := nfstest.StartFront(t, cl, nil)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	nfstest.WriteStrata(t, c, "/x", []byte("attributes"))
	w := dialNFS(t, front.Addr())
	w.session()
	fh := lookupFH(t, w, "x")
	on := func(minor uint32, o op) (uint32, *xdr.Reader) {
		st, _, r := w.compound(minor, w.seqOp(), op{opPutfh, func(x *xdr.Writer) { x.Opaque(fh) }}, o)
		if st == nfsOK {
			skipSequence(r)
			for range 2 { // PUTFH, o: number and status
				r.Uint32()
				r.Uint32()
			}
		}
		return st, r
	}
	set := func(option uint32, key, value string) uint32 {
		st, _ := on(2, op{opSetxattr, func(x *xdr.Writer) {
			x.Uint32(option)
			x.String(key)
			x.Opaque([]byte(value))
		}})
		return st
	}
	get := func(key string) (uint32, string) {
		st, r := on(2, op{opGetxattr, func(x *xdr.Writer) { x.String(key) }})
		if st != nfsOK {
			return st, ""
		}
		return st, string(r.Opaque(1 << 16))
	}

	if st := set(2, "color", "red"); st != nfs4errNoxattr {
		t.Errorf("SETXATTR4_REPLACE of a missing key: status %d, want NFS4ERR_NOXATTR", st)
	}
	if st := set(1, "color", "blue"); st != nfsOK {
		t.Fatalf("SETXATTR4_CREATE: status %d", st)
	}
	if st := set(1, "color", "green"); st != nfs4errExist {
		t.Errorf("SETXATTR4_CREATE of an existing key: status %d, want NFS4ERR_EXIST", st)
	}
	if st, v := get("color"); st != nfsOK || v != "blue" {
		t.Errorf("GETXATTR color: status %d, %q; want blue", st, v)
	}
	if v, err := c.GetXattr(ctx, "/x", "user.color"); err != nil || string(v) != "blue" {
		t.Errorf("the client library reads user.color %q, %v; want blue", v, err)
	}
	if st, v := get("strata.layout"); st != nfsOK || v == "" {
		t.Errorf("GETXATTR strata.layout: status %d, %q; want the file's layout", st, v)
	}
	st, r := on(2, op{opListxattrs, func(x *xdr.Writer) {
		x.Uint64(0)
		x.Uint32(8192)
	}})
	var names []string
	if st == nfsOK {
		r.Uint64() // cookie
		for range r.Count(64, 4) {
			names = append(names, r.String(256))
		}
	}
	if eof := r.Bool(); st != nfsOK || r.Err() != nil || !eof || len(names) != 1 || names[0] != "color" {
		t.Errorf("LISTXATTRS: status %d, %q, eof %v, %v; want [color], eof", st, names, eof, r.Err())
	}
	if st, _ := on(2, op{opRemovexattr, func(x *xdr.Writer) { x.String("color") }}); st != nfsOK {
		t.Errorf("REMOVEXATTR: status %d", st)
	}
	if st, _ := get("color"); st != nfs4errNoxattr {
		t.Errorf("GETXATTR of a removed key: status %d, want NFS4ERR_NOXATTR", st)
	}
	if _, err := c.GetXattr(ctx, "/x", "user.color"); rpc.ToErrno(err) == 0 {
		t.Error("the client library still reads user.color after REMOVEXATTR")
	}
	if st, _ := on(1, op{opGetxattr, func(x *xdr.Writer) { x.String("color") }}); st != nfs4errOpIllegal {
		t.Errorf("GETXATTR in a 4.1 compound: status %d, want NFS4ERR_OP_ILLEGAL", st)
	}
}
