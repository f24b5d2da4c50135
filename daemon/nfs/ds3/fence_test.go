package ds3_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/ds3"
	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
	"github.com/strata-hpc/strata/internal/nfstest"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// v3 is an NFSv3 client connection to a data server's service.
type v3 struct {
	c  *oncrpc.Conn
	fh []byte
}

func dialV3(t *testing.T, addr string, fh []byte) *v3 {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := oncrpc.NewConn(nc, oncrpc.ConnConfig{MaxRecord: 2 << 20, MaxInflight: 1}, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Serve(context.Background())
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	return &v3{c: c, fh: fh}
}

// write sends WRITE FILE_SYNC as uid and returns the NFSv3 status.
func (v *v3) write(t *testing.T, uid uint32, off uint64, data []byte) uint32 {
	t.Helper()
	w := xdr.NewWriter(nil)
	w.Opaque(v.fh)
	w.Uint64(off)
	w.Uint32(uint32(len(data)))
	w.Uint32(2)
	w.Opaque(data)
	res, err := v.c.Call(testcluster.Context(t, time.Minute), 100003, 3, 7, &oncrpc.SysCred{Machine: "test", Uid: uid, Gid: ds3.GID}, w.Bytes())
	if err != nil {
		t.Fatalf("WRITE: %v", err)
	}
	return xdr.NewReader(res).Uint32()
}

// read sends READ as uid and returns the NFSv3 status and the data.
func (v *v3) read(t *testing.T, uid uint32, off uint64, n uint32) (uint32, []byte) {
	t.Helper()
	w := xdr.NewWriter(nil)
	w.Opaque(v.fh)
	w.Uint64(off)
	w.Uint32(n)
	res, err := v.c.Call(testcluster.Context(t, time.Minute), 100003, 3, 6, &oncrpc.SysCred{Machine: "test", Uid: uid, Gid: ds3.GID}, w.Bytes())
	if err != nil {
		t.Fatalf("READ: %v", err)
	}
	r := xdr.NewReader(res)
	st := r.Uint32()
	if st != 0 {
		return st, nil
	}
	r.Bool() // no attributes
	r.Uint32()
	r.Bool()
	return st, r.Opaque(1 << 20)
}

const nfs3ErrAcces = 13

// TestFence: a layout's synthetic identity reads and writes a component
// until the front end fences its epoch; then the data server answers
// NFS3ERR_ACCES to it while the next epoch's identity reads what was
// written. A fence call not signed with the cluster secret changes
// nothing.
func TestFence(t *testing.T) {
	cl := testcluster.Start(t, 1)
	s, err := ds3.New(ds3.Config{Addr: "127.0.0.1:0", DSAddr: cl.DSAddr(0), Secret: cl.Secret()}, nfstest.Log())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := ds3.Handle{Ino: 4242, Gen: 1, Comp: 0, Col: 0, Width: 1, Unit: 1 << 20}
	key := ds3.FenceKey{Ino: h.Ino, Gen: h.Gen, Comp: h.Comp}
	v := dialV3(t, s.Addr(), h.Encode(cl.Secret()))
	ctx := testcluster.Context(t, time.Minute)

	const old, next = 7, 8
	first := bytes.Repeat([]byte("before the fence "), 100)
	if st := v.write(t, ds3.SynthUID(old, true), 0, first); st != 0 {
		t.Fatalf("WRITE with the layout's write identity: status %d", st)
	}
	if st := v.write(t, ds3.SynthUID(old, false), 0, []byte("x")); st != nfs3ErrAcces {
		t.Fatalf("WRITE with a read identity: status %d, want NFS3ERR_ACCES", st)
	}
	if err := ds3.Fence(ctx, s.Addr(), []byte("not the cluster secret"), key, old); !errors.Is(err, ds3.ErrFenceDenied) {
		t.Fatalf("a fence signed with another secret: %v, want ErrFenceDenied", err)
	}
	if st := v.write(t, ds3.SynthUID(old, true), 0, first); st != 0 {
		t.Fatalf("after a refused fence call, WRITE: status %d", st)
	}
	if err := ds3.Fence(ctx, s.Addr(), cl.Secret(), key, old); err != nil {
		t.Fatal(err)
	}
	if st := v.write(t, ds3.SynthUID(old, true), 0, []byte("after the fence")); st != nfs3ErrAcces {
		t.Fatalf("WRITE with the fenced identity: status %d, want NFS3ERR_ACCES", st)
	}
	if st, _ := v.read(t, ds3.SynthUID(old, false), 0, 100); st != nfs3ErrAcces {
		t.Fatalf("READ with the fenced read identity: status %d, want NFS3ERR_ACCES", st)
	}
	st, got := v.read(t, ds3.SynthUID(next, false), 0, uint32(len(first)))
	if st != 0 || !bytes.Equal(got, first) {
		t.Fatalf("READ with the next epoch's identity: status %d, %d bytes (want the %d written before the fence)", st, len(got), len(first))
	}
	if fences, refused := s.Fenced(); fences != 1 || refused != 2 {
		t.Fatalf("Fenced() = %d fences, %d refused calls; want 1 and 2", fences, refused)
	}
}
