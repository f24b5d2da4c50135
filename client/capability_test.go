package client_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/testcluster"
)

func componentID(ino, gen uint64, col uint32) rpc.ComponentID {
	return rpc.ComponentID{Ino: ino, Gen: gen, Col: col}
}

// TestCapabilityRefused: a data server refuses a forged, an expired and a
// misdirected capability with 403, and the file is unchanged.
func TestCapabilityRefused(t *testing.T) {
	cl := testcluster.Start(t, 1)
	c := cl.Client()
	ctx := testcluster.Context(t, time.Minute)
	f, err := c.OpenFileLayout(ctx, "/guarded", os.O_RDWR|os.O_CREATE, 0o644, "width=1,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("original")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var lg rpc.LayoutGetResp
	rc := rpc.NewClient(rpc.ClientConfig{Auth: cl.Credentials().Header})
	defer rc.Close()
	a, _ := c.Stat(ctx, "/guarded")
	if err := rc.Call(ctx, cl.MDSAddr(), rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: a.Ino, Write: true}, &lg); err != nil {
		t.Fatal(err)
	}
	id := componentID(a.Ino, lg.Layout.Generation, 0)
	addr := lg.Layout.Addrs[0]

	forged := lg.Cap
	forged.Ops |= capability.OpAdmin
	wrongKey := lg.Cap
	other, _ := capability.NewSecret()
	wrongKey.Sign(other)
	expired := lg.Cap
	expired.Expiry = time.Now().Add(-time.Minute).UnixNano()
	expired.Sign(cl.Secret())
	otherFile := lg.Cap
	otherFile.Ino++
	otherFile.Sign(cl.Secret())
	readOnly := lg.Cap
	readOnly.Ops = capability.OpRead
	readOnly.Sign(cl.Secret())

	for name, tok := range map[string]capability.Token{
		"forged": forged, "wrong key": wrongKey, "expired": expired, "other file": otherFile, "read-only": readOnly, "none": {},
	} {
		_, err := rc.CallData(ctx, addr, rpc.DWrite, &rpc.DSReq{Cap: tok, ID: id}, []byte("CORRUPTED"), &rpc.DSResp{}, nil)
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("write with %s capability: %v, want EACCES", name, err)
		}
	}
	if _, err := rc.CallData(ctx, addr, rpc.DRemove, &rpc.DSReq{Cap: lg.Cap, ID: id}, nil, &rpc.DSResp{}, nil); !errors.Is(err, syscall.EACCES) {
		t.Errorf("remove with a client's capability: %v, want EACCES", err)
	}
	// The refusal is an HTTP 403 on the wire.
	resp, err := http.Post("http://"+addr+"/rpc/"+rpc.DRead, "application/octet-stream", strings.NewReader("\x01\x00"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("read without a capability: HTTP %d, want 403", resp.StatusCode)
	}
	if got := readAll(t, context.Background(), c, "/guarded"); string(got) != "original" {
		t.Fatalf("file after refused writes = %q", got)
	}
}
