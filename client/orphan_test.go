package client_test

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestOrphanNotResurrected: a write capability saved before `rm` (and
// before a new layout replaced an empty file's generation) is refused by
// the data servers once the MDS removed the components — writes, reads
// and truncates alike — and no component of the removed generation
// reappears on any data server.
func TestOrphanNotResurrected(t *testing.T) {
	cl := testcluster.Start(t, 2)
	c := cl.Client()
	ctx := testcluster.Context(t, 2*time.Minute)
	rc := rpc.NewClient(rpc.ClientConfig{Auth: cl.Credentials().Header})
	defer rc.Close()

	// saved returns a write layout of name, as a client that keeps it
	// would hold it.
	saved := func(name string) (uint64, *rpc.LayoutGetResp) {
		t.Helper()
		a, err := c.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var lg rpc.LayoutGetResp
		if err := rc.Call(ctx, cl.MDSAddr(), rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: a.Ino, Write: true}, &lg); err != nil {
			t.Fatal(err)
		}
		return a.Ino, &lg
	}
	// gone waits until no data server holds a component of the
	// generation, then replays the saved capability on every component.
	gone := func(what string, ino uint64, lg *rpc.LayoutGetResp) {
		t.Helper()
		paths := func() []string {
			var out []string
			for col := range lg.Layout.Targets {
				id := rpc.ComponentID{Ino: ino, Gen: lg.Layout.Generation, Col: uint32(col)}
				for i := range cl.NumDS() {
					if _, err := os.Stat(cl.DS(i).ComponentPath(id)); err == nil {
						out = append(out, cl.DS(i).ComponentPath(id))
					}
				}
			}
			return out
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(paths()) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: components still on the data servers after 30s: %v", what, paths())
			}
			time.Sleep(50 * time.Millisecond)
		}
		for col, addr := range lg.Layout.Addrs {
			id := rpc.ComponentID{Ino: ino, Gen: lg.Layout.Generation, Col: uint32(col)}
			req := rpc.DSReq{Cap: lg.Cap, ID: id}
			if _, err := rc.CallData(ctx, addr, rpc.DWrite, &req, []byte("resurrected"), &rpc.DSResp{}, nil); !errors.Is(err, syscall.ESTALE) {
				t.Errorf("%s: write of column %d with the saved capability: %v, want ESTALE", what, col, err)
			}
			req.Size = 1 << 20
			if err := rc.Call(ctx, addr, rpc.DTruncate, &req, &rpc.DSResp{}); !errors.Is(err, syscall.ESTALE) {
				t.Errorf("%s: truncate of column %d with the saved capability: %v, want ESTALE", what, col, err)
			}
			req = rpc.DSReq{Cap: lg.Cap, ID: id, Len: 64}
			if _, err := rc.CallData(ctx, addr, rpc.DRead, &req, nil, &rpc.DSResp{}, make([]byte, 64)); !errors.Is(err, syscall.ESTALE) {
				t.Errorf("%s: read of column %d with the saved capability: %v, want ESTALE", what, col, err)
			}
		}
		if p := paths(); len(p) > 0 {
			t.Errorf("%s: the replayed capability re-created %v", what, p)
		}
	}

	f, err := c.OpenFileLayout(ctx, "/victim", os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("v"), 256<<10)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ino, lg := saved("/victim")
	if err := c.Remove(ctx, "/victim"); err != nil {
		t.Fatal(err)
	}
	gone("after rm", ino, lg)

	// An empty file given a new layout: its first generation is gone.
	f, err = c.OpenFileLayout(ctx, "/relaid", os.O_RDWR|os.O_CREATE, 0o644, "width=2,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ino, lg = saved("/relaid")
	for col, addr := range lg.Layout.Addrs { // the old generation's components exist
		req := rpc.DSReq{Cap: lg.Cap, ID: rpc.ComponentID{Ino: ino, Gen: lg.Layout.Generation, Col: uint32(col)}, Size: 0}
		if err := rc.Call(ctx, addr, rpc.DTruncate, &req, &rpc.DSResp{}); err != nil {
			t.Fatal(err)
		}
		w := req
		w.Sums = rpc.AppendSums(nil, 0, []byte("x"))
		if _, err := rc.CallData(ctx, addr, rpc.DWrite, &w, []byte("x"), &rpc.DSResp{}, nil); err != nil {
			t.Fatal(err)
		}
		if err := rc.Call(ctx, addr, rpc.DTruncate, &req, &rpc.DSResp{}); err != nil { // empty again: the MDS sees size 0
			t.Fatal(err)
		}
	}
	if err := c.SetLayout(ctx, "/relaid", "width=1,unit=64K"); err != nil {
		t.Fatal(err)
	}
	gone("after a new layout", ino, lg)
}
