package ds

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

// TestRebuildTokenScope: a rebuild capability names one component on one
// data server; used for another file, another column or on another server,
// it is refused and reads nothing.
func TestRebuildTokenScope(t *testing.T) {
	h := newHarness(t)
	a := rpc.ComponentID{Ino: 10, Gen: 1, Col: 2}
	b := rpc.ComponentID{Ino: 11, Gen: 1, Col: 2}
	for _, id := range []rpc.ComponentID{a, b} {
		if _, err := h.write(id, 0, []byte("secret bytes")); err != nil {
			t.Fatal(err)
		}
	}
	rebuild := func(id rpc.ComponentID, target string) capability.Token {
		tok := capability.Token{Ino: id.Ino, Gen: id.Gen, Ops: capability.OpAdmin, Class: rpc.ClassRebuild,
			Expiry: time.Now().Add(time.Minute).UnixNano(), Target: target, Comp: id.Col + 1}
		tok.Sign(h.secret)
		return tok
	}
	read := func(tok capability.Token, id rpc.ComponentID) error {
		var resp rpc.DSResp
		_, err := h.c.CallData(context.Background(), h.s.Addr(), rpc.DRead, &rpc.DSReq{Cap: tok, ID: id, Len: 12}, nil, &resp, make([]byte, 12))
		return err
	}
	if err := read(rebuild(a, "ds1"), a); err != nil {
		t.Fatalf("rebuild token on its own component: %v", err)
	}
	other := rpc.ComponentID{Ino: a.Ino, Gen: a.Gen, Col: 0}
	for name, err := range map[string]error{
		"another file":   read(rebuild(a, "ds1"), b),
		"another column": read(rebuild(a, "ds1"), other),
		"another server": read(rebuild(a, "ds2"), a),
	} {
		if !errors.Is(err, syscall.EACCES) {
			t.Errorf("rebuild token used for %s: %v, want EACCES", name, err)
		}
	}
	if _, err := h.call(rpc.DRemove, rebuild(a, "ds1"), b, 0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("rebuild token removing another file: %v", err)
	}
	if h.stat(b) != 12 {
		t.Error("the other file's component is gone")
	}
}

// TestCapabilityBoundToClient: a capability issued to one client is
// refused to a caller with another credential or none.
func TestCapabilityBoundToClient(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 5, Gen: 1}
	tok := h.rw(id)
	tok.Client = "n:alice-node"
	tok.Sign(h.secret)
	write := func(c *rpc.Client) error {
		var resp rpc.DSResp
		_, err := c.CallData(context.Background(), h.s.Addr(), rpc.DWrite, &rpc.DSReq{Cap: tok, ID: id, Sums: rpc.AppendSums(nil, 0, []byte("x"))}, []byte("x"), &resp, nil)
		return err
	}
	client := func(node string) *rpc.Client {
		cr := identity.NewNodeCredentials(h.secret, identity.RoleNode, node, "")
		c := rpc.NewClient(rpc.ClientConfig{Auth: cr.Header})
		t.Cleanup(c.Close)
		return c
	}
	if err := write(client("alice-node")); err != nil {
		t.Fatalf("the client it was issued to: %v", err)
	}
	if err := write(client("bob-node")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("another client: %v, want EACCES", err)
	}
	if err := write(h.c); !errors.Is(err, syscall.EACCES) {
		t.Errorf("no credential: %v, want EACCES", err)
	}
}
