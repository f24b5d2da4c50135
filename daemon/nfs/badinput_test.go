package nfs_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// NFS status codes the tests expect (RFC 8881).
const (
	nfs4errStale         = 70
	nfs4errBadhandle     = 10001
	nfs4errMinorVersMism = 10021
	nfs4errBadxdr        = 10036
	nfs4errOpIllegal     = 10044
	nfs4errTooManyOps    = 10070
	nfs4errOpNotInSess   = 10071
	opIllegal            = 10044
)

// TestBadInput sends what a broken or hostile client might: each gets the
// answer RFC 5531 or RFC 8881 names, or a closed connection, and the
// server keeps serving.
func TestBadInput(t *testing.T) {
	cl := testcluster.Start(t, 1)
	front := nfstest.StartFront(t, cl, nil)
	addr := front.Addr()

	t.Run("null", func(t *testing.T) {
		c := dialNFS(t, addr)
		if st, _, err := c.call(100003, 4, 0, nil); err != nil || st != oncrpc.Success {
			t.Fatalf("NULL: %d %v", st, err)
		}
	})
	t.Run("wrong program and version", func(t *testing.T) {
		c := dialNFS(t, addr)
		if st, _, _ := c.call(100005, 3, 0, nil); st != oncrpc.ProgUnavail {
			t.Errorf("MOUNT program: accept state %d, want PROG_UNAVAIL", st)
		}
		st, r, _ := c.call(100003, 3, 0, nil)
		if lo, hi := r.Uint32(), r.Uint32(); st != oncrpc.ProgMismatch || lo != 4 || hi != 4 {
			t.Errorf("NFSv3 at the MDS: accept state %d (%d..%d), want PROG_MISMATCH 4..4", st, lo, hi)
		}
		if st, _, _ := c.call(100003, 4, 7, nil); st != oncrpc.ProcUnavail {
			t.Errorf("procedure 7: accept state %d, want PROC_UNAVAIL", st)
		}
	})
	t.Run("malformed compound header", func(t *testing.T) {
		c := dialNFS(t, addr)
		if st, _, _ := c.call(100003, 4, 1, []byte{0, 0}); st != oncrpc.GarbageArgs {
			t.Errorf("2-byte COMPOUND: accept state %d, want GARBAGE_ARGS", st)
		}
	})
	t.Run("minor version 0 and 3", func(t *testing.T) {
		c := dialNFS(t, addr)
		for _, m := range []uint32{0, 3} {
			if st, _, _ := c.compound(m, op{opPutrootfh, nil}); st != nfs4errMinorVersMism {
				t.Errorf("minor version %d: %d, want NFS4ERR_MINOR_VERS_MISMATCH", m, st)
			}
		}
	})
	t.Run("unknown op", func(t *testing.T) {
		c := dialNFS(t, addr)
		st, res, _ := c.compound(1, op{9999, nil})
		if st != nfs4errOpIllegal || len(res) != 1 || res[0].num != opIllegal {
			t.Errorf("op 9999: %d %v, want NFS4ERR_OP_ILLEGAL from OP_ILLEGAL", st, res)
		}
	})
	t.Run("ops outside a session", func(t *testing.T) {
		c := dialNFS(t, addr)
		if st, _, _ := c.compound(1, op{opPutrootfh, nil}); st != nfs4errOpNotInSess {
			t.Errorf("PUTROOTFH first: %d, want NFS4ERR_OP_NOT_IN_SESSION", st)
		}
	})
	t.Run("10000 ops", func(t *testing.T) {
		c := dialNFS(t, addr)
		c.session()
		ops := []op{c.seqOp()}
		for range 9999 {
			ops = append(ops, op{opPutrootfh, nil})
		}
		if st, _, _ := c.compound(1, ops...); st != nfs4errTooManyOps {
			t.Errorf("10000-op COMPOUND: %d, want NFS4ERR_TOO_MANY_OPS", st)
		}
	})
	t.Run("file handles", func(t *testing.T) {
		nfstest.WriteStrata(t, cl.Client(), "/doomed", []byte("x"))
		c := dialNFS(t, addr)
		c.session()
		st, res, r := c.compound(1, c.seqOp(), op{opPutrootfh, nil},
			op{opLookup, func(w *xdr.Writer) { w.String("doomed") }}, op{opGetfh, nil})
		if st != 0 {
			t.Fatalf("LOOKUP doomed: %d %v", st, res)
		}
		skipSequence(r)
		r.Uint32()
		r.Uint32() // PUTROOTFH
		r.Uint32()
		r.Uint32() // LOOKUP
		r.Uint32()
		r.Uint32() // GETFH
		fh := append([]byte(nil), r.Opaque(128)...)
		if r.Err() != nil || len(fh) == 0 {
			t.Fatalf("no file handle: %v", r.Err())
		}
		forged := append([]byte(nil), fh...)
		binary.BigEndian.PutUint64(forged[8:], 1) // the root's inode, without the key
		for name, h := range map[string][]byte{"forged": forged, "short": fh[:5], "empty": nil} {
			st, _, _ := c.compound(1, c.seqOp(), op{opPutfh, func(w *xdr.Writer) { w.Opaque(h) }}, op{opGetattr, func(w *xdr.Writer) { w.Uint32(0) }})
			if st != nfs4errBadhandle {
				t.Errorf("%s handle: %d, want NFS4ERR_BADHANDLE", name, st)
			}
		}
		ctx := testcluster.Context(t, time.Minute)
		if err := cl.Client().Remove(ctx, "/doomed"); err != nil {
			t.Fatal(err)
		}
		st, _, _ = c.compound(1, c.seqOp(), op{opPutfh, func(w *xdr.Writer) { w.Opaque(fh) }}, op{opGetattr, func(w *xdr.Writer) { w.Uint32(0) }})
		if st != nfs4errStale {
			t.Errorf("handle of a removed file: %d, want NFS4ERR_STALE", st)
		}
	})
	t.Run("truncated op arguments", func(t *testing.T) {
		c := dialNFS(t, addr)
		c.session()
		st, _, _ := c.compound(1, c.seqOp(), op{opPutrootfh, nil}, op{opLookup, func(w *xdr.Writer) { w.Uint32(1000) }})
		if st != nfs4errBadxdr {
			t.Errorf("LOOKUP of a 1000-byte name with no bytes: %d, want NFS4ERR_BADXDR", st)
		}
	})
	t.Run("1 GiB record", func(t *testing.T) {
		c := dialNFS(t, addr)
		var h [4]byte
		binary.BigEndian.PutUint32(h[:], 1<<30|1<<31)
		if _, err := c.nc.Write(append(h[:], 0, 0, 0, 1)); err != nil {
			t.Fatal(err)
		}
		if !c.closedByServer() {
			t.Errorf("the connection stayed open after a declared 1 GiB record")
		}
	})
	t.Run("not a call", func(t *testing.T) {
		c := dialNFS(t, addr)
		w := xdr.NewWriter(nil)
		w.Uint32(1)
		w.Uint32(7)
		h := oncrpc.RecordHeader(w.Len())
		if _, err := c.nc.Write(append(h[:], w.Bytes()...)); err != nil {
			t.Fatal(err)
		}
		if !c.closedByServer() {
			t.Errorf("the connection stayed open after message type 7")
		}
	})
	t.Run("still serving", func(t *testing.T) {
		c := dialNFS(t, addr)
		if st, _, err := c.call(100003, 4, 0, nil); err != nil || st != oncrpc.Success {
			t.Fatalf("NULL after the bad input: %d %v", st, err)
		}
	})
}
