package nfs_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const (
	opRead = 25
	nfsOK  = 0
)

// lookupFH returns the file handle of /name.
func lookupFH(t *testing.T, w *wireClient, name string) []byte {
	t.Helper()
	st, res, r := w.compound(1, w.seqOp(), op{opPutrootfh, nil},
		op{opLookup, func(x *xdr.Writer) { x.String(name) }}, op{opGetfh, nil})
	if st != nfsOK {
		t.Fatalf("LOOKUP %s: status %d %v", name, st, res)
	}
	skipSequence(r)
	for range 2 { // PUTROOTFH, LOOKUP
		r.Uint32()
		r.Uint32()
	}
	r.Uint32()
	r.Uint32()
	fh := r.Opaque(128)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return fh
}

// readFH reads n bytes at 0 of the file fh names (anonymous stateid) and
// returns the compound's status and the data.
func readFH(t *testing.T, w *wireClient, fh []byte, n uint32) (uint32, []byte) {
	t.Helper()
	st, _, r := w.compound(1, w.seqOp(), op{opPutfh, func(x *xdr.Writer) { x.Opaque(fh) }},
		op{opRead, func(x *xdr.Writer) {
			x.Uint32(0)
			x.Fixed(make([]byte, 12))
			x.Uint64(0)
			x.Uint32(n)
		}})
	if st != nfsOK {
		return st, nil
	}
	skipSequence(r)
	r.Uint32()
	r.Uint32() // PUTFH
	r.Uint32()
	r.Uint32() // READ
	r.Bool()   // eof
	return st, r.Opaque(int(n))
}

// TestHandlesSurviveLeaderChange: a file handle the front end gave out
// before the MDS raft leader is killed still names the file after a new
// leader took over, both for the running front end and for a front end
// started afterwards (as after a restart): it reads the file's bytes.
func TestHandlesSurviveLeaderChange(t *testing.T) {
	cl := testcluster.Start(t, 2, testcluster.WithMDS(3))
	c := cl.Client()
	data := nfsguest.Pattern(9, 300<<10)
	nfstest.WriteStrata(t, c, "/kept.bin", data)
	front := nfstest.StartFront(t, cl, nil)
	w := dialNFS(t, front.Addr())
	w.session()
	fh := lookupFH(t, w, "kept.bin")
	if st, got := readFH(t, w, fh, uint32(len(data))); st != nfsOK || !bytes.Equal(got, data) {
		t.Fatalf("READ before the leader change: status %d, %d bytes", st, len(got))
	}
	old := cl.WaitLeader()
	if err := cl.StopMDSReplica(old); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped the MDS leader, replica %d", old)
	deadline := time.Now().Add(2 * time.Minute)
	for cl.Leader() < 0 || cl.Leader() == old {
		if time.Now().After(deadline) {
			t.Fatal("no new MDS leader within 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	read := func(w *wireClient) {
		t.Helper()
		for {
			st, got := readFH(t, w, fh, uint32(len(data)))
			if st == nfsOK {
				if !bytes.Equal(got, data) {
					t.Fatalf("READ after the leader change: %d bytes, not the %d written, or they differ", len(got), len(data))
				}
				return
			}
			const delay = 10008 // NFS4ERR_DELAY: the client library is still finding the leader
			if st != delay || time.Now().After(deadline) {
				t.Fatalf("READ of the old handle after the leader change: status %d", st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	read(w)
	w2 := dialNFS(t, nfstest.StartFront(t, cl, nil).Addr())
	w2.session()
	read(w2)
	if fh2 := lookupFH(t, w2, "kept.bin"); !bytes.Equal(fh2, fh) {
		t.Errorf("a new front end hands out another handle for the same file")
	}
}
