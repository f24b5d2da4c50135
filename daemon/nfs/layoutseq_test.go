package nfs_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const nfs4errOldStateid = 10024

// TestLayoutReturnSeqid: LAYOUTRETURN with a layout stateid older than
// the last one the client was given is NFS4ERR_OLD_STATEID (pynfs FFLOOS;
// RFC 8881 section 12.5.3), also after a recall the client never heard
// moved the seqid on; the last one given is taken then, so that a fenced
// client can return its layout. LAYOUTCOMMIT takes an older seqid (the
// Linux client resends a LAYOUTCOMMIT refused NFS4ERR_OLD_STATEID with
// the same stateid, so while its LAYOUTGETs went on it looped on it and
// its 256 MiB write never finished), and the stateid of a layout the
// client returned (its fsync failed with EIO when a LAYOUTRETURN sent at
// the same time was done first).
func TestLayoutReturnSeqid(t *testing.T) {
	rig := nfstest.StartPNFSFront(t, 1, func(c *nfs.Config) { c.RecallTimeout = time.Second },
		testcluster.WithDefaultLayout("width=1,unit=1M,scheme=none"))
	c := rig.Cl.Client()
	nfstest.WriteStrata(t, c, "/seq", []byte("layout stateids"))
	a, err := c.Stat(testcluster.Context(t, time.Minute), "/seq")
	if err != nil {
		t.Fatal(err)
	}
	w := dialNFS(t, rig.Front.Addr())
	w.session()
	fh := lookupFH(t, w, "seq")
	s1 := layoutGet(t, w, fh, openFH(t, w, fh, "seq-test"))
	s2 := layoutGet(t, w, fh, s1)
	s3 := layoutGet(t, w, fh, s1) // an older seqid is taken by LAYOUTGET
	for i, s := range [][]byte{s1, s2, s3} {
		if got := binary.BigEndian.Uint32(s); got != uint32(i+1) {
			t.Fatalf("LAYOUTGET %d gave seqid %d, want %d", i+1, got, i+1)
		}
	}
	// LAYOUTCOMMIT publishes the size with the stateid of the first
	// LAYOUTGET: the Linux client's LAYOUTCOMMIT may be older than its
	// last LAYOUTGET.
	commit := func(sid []byte, end uint64) {
		t.Helper()
		st, res, r := w.compound(1, w.seqOp(), op{opPutfh, func(x *xdr.Writer) { x.Opaque(fh) }},
			op{opLayoutcommit, func(x *xdr.Writer) {
				x.Uint64(0)
				x.Uint64(end)
				x.Bool(false)
				x.Fixed(sid)
				x.Bool(true)
				x.Uint64(end - 1) // the last byte written
				x.Bool(false)
				x.Uint32(4)
				x.Opaque(nil)
			}})
		if st != nfsOK {
			t.Fatalf("LAYOUTCOMMIT with seqid %d: status %d %v, want NFS4_OK", binary.BigEndian.Uint32(sid), st, res)
		}
		skipSequence(r)
		r.Uint32() // PUTFH: number and status
		r.Uint32()
		r.Uint32() // LAYOUTCOMMIT: number and status
		r.Uint32()
		if r.Bool(); r.Uint64() != end || r.Err() != nil {
			t.Fatalf("LAYOUTCOMMIT did not publish size %d: %v", end, r.Err())
		}
		if a, err := c.Stat(testcluster.Context(t, time.Minute), "/seq"); err != nil || a.Size != end {
			t.Fatalf("after LAYOUTCOMMIT: %+v, %v; want size %d", a, err, end)
		}
	}
	commit(s1, 1<<20)
	ret := func(sid []byte) uint32 {
		st, _, _ := w.compound(1, w.seqOp(), op{opPutfh, func(x *xdr.Writer) { x.Opaque(fh) }},
			op{opLayoutreturn, func(x *xdr.Writer) {
				x.Bool(false)
				x.Uint32(4) // LAYOUT4_FLEX_FILES
				x.Uint32(3) // LAYOUTIOMODE4_ANY
				x.Uint32(1) // LAYOUTRETURN4_FILE
				x.Uint64(0)
				x.Uint64(^uint64(0))
				x.Fixed(sid)
				x.Opaque(nil)
			}})
		return st
	}
	if st := ret(s1); st != nfs4errOldStateid {
		t.Fatalf("LAYOUTRETURN with seqid 1 of 3: status %d, want NFS4ERR_OLD_STATEID", st)
	}

	// A recall this session has no backchannel to hear: the layout is
	// fenced once the recall timeout passes.
	rig.Front.RecallLayouts(a.Ino)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, fenced := rig.Front.RecallStats(); fenced > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the layout was not fenced within 2 minutes of its recall")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := ret(s2); st != nfs4errOldStateid {
		t.Fatalf("LAYOUTRETURN with seqid 2 after a missed recall: status %d, want NFS4ERR_OLD_STATEID", st)
	}
	if st := ret(s3); st != nfsOK {
		t.Fatalf("LAYOUTRETURN with the last seqid given (3) after a missed recall: status %d, want NFS4_OK", st)
	}
	if st := ret(s3); st == nfsOK {
		t.Fatal("a returned layout's stateid was taken again")
	}
	// The Linux client's LAYOUTCOMMIT may be done after the LAYOUTRETURN
	// it sent at the same time: the size is still published.
	commit(s3, 2<<20)
}
