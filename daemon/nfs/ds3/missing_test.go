package ds3_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

const nfs3ErrIO = 5

// TestMissingComponentIO: a READ of a component the data server lost
// (removed behind the MDS's back) answers NFS3ERR_IO, not zeros, while
// a hole inside the file's size, a column that holds nothing of a small
// file, and the range past the file's end still read as zeros.
func TestMissingComponentIO(t *testing.T) {
	cl := testcluster.Start(t, 2)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	var servers []*ds3.Server
	for i := range cl.NumDS() {
		s, err := ds3.New(ds3.Config{Addr: "127.0.0.1:0", DSAddr: cl.DSAddr(i), Secret: cl.Secret(), Size: ds3.SizeFrom(c)}, nfstest.Log())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		servers = append(servers, s)
	}
	const unit = 64 << 10
	// write creates name (width 2, unit 64K) with data at each offset
	// and returns a function that dials the service holding component
	// comp of it.
	write := func(name string, at map[int64][]byte) (rpc.ComponentID, string, func(comp uint32) *v3) {
		t.Helper()
		f, err := c.OpenFileLayout(ctx, name, os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=64K,scheme=none")
		if err != nil {
			t.Fatal(err)
		}
		for off, b := range at {
			if _, err := f.WriteAt(b, off); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := c.GetLayout(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		dial := func(comp uint32) *v3 {
			h := ds3.Handle{Ino: a.Ino, Gen: info.Layout.Generation, Comp: comp, Col: comp, Width: 2, Unit: unit}
			i := cl.DSIndex(info.Layout.Targets[comp])
			return dialV3(t, servers[i].Addr(), h.Encode(cl.Secret()))
		}
		return rpc.ComponentID{Ino: a.Ino, Gen: info.Layout.Generation}, info.Layout.Targets[0], dial
	}
	uid := ds3.SynthUID(1, false)
	zeros := make([]byte, unit)
	readZeros := func(v *v3, what string, off uint64) {
		t.Helper()
		st, got := v.read(t, uid, off, unit)
		if st != 0 || !bytes.Equal(got, zeros) {
			t.Fatalf("READ of %s: status %d, %d bytes, zeros %v; want %d zeros", what, st, len(got), bytes.Equal(got, zeros), unit)
		}
	}

	// Units 0 and 3 written, units 1 and 2 a hole: file size 256K.
	data := bytes.Repeat([]byte("strata"), unit/6+1)[:unit]
	_, _, dial := write("/sparse", map[int64][]byte{0: data, 3 * unit: data})
	readZeros(dial(1), "a hole inside the size (unit 1, column 1)", unit)
	readZeros(dial(0), "a hole inside the size (unit 2, column 0)", 2*unit)
	readZeros(dial(1), "past the file's end (unit 5, column 1)", 5*unit)
	if st, got := dial(1).read(t, uid, 3*unit, unit); st != 0 || !bytes.Equal(got, data) {
		t.Fatalf("READ of unit 3: status %d, %d bytes; want the %d written", st, len(got), len(data))
	}

	// A file of less than a unit: column 1 holds nothing of it.
	_, _, dial = write("/small", map[int64][]byte{0: []byte("small")})
	readZeros(dial(1), "a column that holds nothing of a small file", unit)

	// Column 0 of a full file lost.
	id, target, dial := write("/lost", map[int64][]byte{0: bytes.Repeat(data, 4)})
	if err := cl.LoseComponent(ctx, target, id); err != nil {
		t.Fatal(err)
	}
	for _, off := range []uint64{0, 2 * unit} {
		if st, got := dial(0).read(t, uid, off, unit); st != nfs3ErrIO {
			t.Fatalf("READ at %d of a lost component: status %d with %d bytes; want NFS3ERR_IO", off, st, len(got))
		}
	}
	if st, got := dial(1).read(t, uid, unit, unit); st != 0 || !bytes.Equal(got, data) {
		t.Fatalf("READ of the surviving column: status %d, %d bytes; want the %d written", st, len(got), len(data))
	}
}
