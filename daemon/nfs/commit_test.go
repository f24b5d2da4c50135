package nfs_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfsguest"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const (
	opOpen         = 18
	opLayoutget    = 50
	opLayoutcommit = 49
	opLayoutreturn = 51
)

// TestLayoutCommitGrowsColumns: a kernel client that wrote a file
// sparsely (width 2, only unit 2 written, on column 0) and then commits
// its end (LAYOUTCOMMIT, 192K) leaves column 1 with nothing of its share
// (unit 1). The front end grows it with a hole before it publishes the
// size, so the hole reads as zeros — through the client library, which
// takes a column short of its share for lost bytes (EIO), and through the
// front end — for a none and a mirror layout.
func TestLayoutCommitGrowsColumns(t *testing.T) {
	rig := nfstest.StartPNFS(t, 4) // mirror:2 of width 2 needs 4
	c := rig.Cl.Client()
	ctx := testcluster.Context(t, 2*time.Minute)
	const unit = 64 << 10
	data := nfsguest.Pattern(11, unit)
	want := append(make([]byte, 2*unit), data...)
	for name, spec := range map[string]string{"none": "width=2,unit=64K,scheme=none", "mirror": "width=2,unit=64K,scheme=mirror:2"} {
		t.Run(name, func(t *testing.T) {
			// The kernel client's WRITEs to the data servers: unit 2
			// only, not committed by this writer.
			f, err := c.OpenFileLayout(ctx, "/"+name, os.O_RDWR|os.O_CREATE, 0o666, spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.Close() })
			if _, err := f.WriteAt(data, 2*unit); err != nil {
				t.Fatal(err)
			}

			w := dialNFS(t, rig.Front.Addr())
			w.session()
			fh := lookupFH(t, w, name)
			laySid := layoutGet(t, w, fh, openFH(t, w, fh, "commit-test"))
			r := onFile(t, w, fh, "LAYOUTCOMMIT", op{opLayoutcommit, func(x *xdr.Writer) {
				x.Uint64(0)
				x.Uint64(uint64(len(want)))
				x.Bool(false)
				x.Fixed(laySid)
				x.Bool(true)
				x.Uint64(uint64(len(want)) - 1) // the last byte written
				x.Bool(false)
				x.Uint32(4)
				x.Opaque(nil)
			}})
			if r.Bool(); r.Uint64() != uint64(len(want)) || r.Err() != nil {
				t.Fatalf("LAYOUTCOMMIT did not publish size %d: %v", len(want), r.Err())
			}

			got, err := nfstest.TryRead(ctx, c, "/"+name)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("client library read: %d bytes, want %d (zeros, then unit 2): %v", len(got), len(want), err)
			}
			if st, got := readFH(t, w, fh, uint32(len(want))); st != nfsOK || !bytes.Equal(got, want) {
				t.Fatalf("READ through the front end: status %d, %d bytes; want %d (zeros, then unit 2)", st, len(got), len(want))
			}
		})
	}
}

// openFH opens the file fh names for reading and writing (CLAIM_FH, the
// open owner owner) and returns the open stateid.
func openFH(t *testing.T, w *wireClient, fh []byte, owner string) []byte {
	t.Helper()
	r := onFile(t, w, fh, "OPEN", op{opOpen, func(x *xdr.Writer) {
		x.Uint32(0)
		x.Uint32(3) // OPEN4_SHARE_ACCESS_BOTH
		x.Uint32(0)
		x.Uint64(0)
		x.Opaque([]byte(owner))
		x.Uint32(0) // OPEN4_NOCREATE
		x.Uint32(4) // CLAIM_FH
	}})
	sid := append([]byte(nil), r.Fixed(16)...)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return sid
}

// layoutGet asks for a read-write flex-files layout of the whole file fh
// names with stateid sid and returns the layout stateid.
func layoutGet(t *testing.T, w *wireClient, fh, sid []byte) []byte {
	t.Helper()
	r := onFile(t, w, fh, "LAYOUTGET", op{opLayoutget, func(x *xdr.Writer) {
		x.Bool(false)
		x.Uint32(4) // LAYOUT4_FLEX_FILES
		x.Uint32(2) // LAYOUTIOMODE4_RW
		x.Uint64(0)
		x.Uint64(^uint64(0))
		x.Uint64(0)
		x.Fixed(sid)
		x.Uint32(1 << 20)
	}})
	r.Bool() // return on close
	lay := append([]byte(nil), r.Fixed(16)...)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return lay
}

// onFile sends SEQUENCE, PUTFH fh and o, fails the test unless all
// succeed, and returns a reader positioned at o's result.
func onFile(t *testing.T, w *wireClient, fh []byte, name string, o op) *xdr.Reader {
	t.Helper()
	st, res, r := w.compound(1, w.seqOp(), op{opPutfh, func(x *xdr.Writer) { x.Opaque(fh) }}, o)
	if st != nfsOK {
		t.Fatalf("%s: status %d %v", name, st, res)
	}
	skipSequence(r)
	for range 2 { // PUTFH, o: number and status
		r.Uint32()
		r.Uint32()
	}
	return r
}
