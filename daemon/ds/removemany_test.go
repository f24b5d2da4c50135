package ds

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestRemoveMany: one DRemoveMany does what a DRemove per item would:
// components with a tombstone are gone and their generation's saved
// capabilities refused (also after a restart), one never written is
// answered as removed, one without a tombstone is removed and revokes
// nothing, and an item whose capability is not an admin one is refused on
// its own and its component kept. Too many items are refused whole.
func TestRemoveMany(t *testing.T) {
	h := newHarness(t)
	a := rpc.ComponentID{Ino: 42, Gen: 3, Col: 1}
	b := rpc.ComponentID{Ino: 43, Gen: 1, Col: 0}
	never := rpc.ComponentID{Ino: 44, Gen: 1, Col: 2}
	kept := rpc.ComponentID{Ino: 45, Gen: 1, Col: 0}
	moved := rpc.ComponentID{Ino: 46, Gen: 2, Col: 0}
	for _, id := range []rpc.ComponentID{a, b, kept, moved} {
		h.mustWrite(id, 0, []byte("data of a component"))
	}
	until := time.Now().Add(time.Minute).UnixNano()
	req := rpc.RemoveManyReq{Items: []rpc.DSReq{
		{Cap: h.adminOf(a), ID: a, Tombstone: until},
		{Cap: h.adminOf(b), ID: b, Tombstone: until},
		{Cap: h.adminOf(never), ID: never, Tombstone: until},
		{Cap: h.rw(kept), ID: kept, Tombstone: until}, // not an admin capability
		{Cap: h.adminOf(moved), ID: moved},            // a moved copy: no tombstone
	}}
	var resp rpc.RemoveManyResp
	if err := h.c.Call(t.Context(), h.s.Addr(), rpc.DRemoveMany, &req, &resp); err != nil {
		t.Fatalf("remove many: %v", err)
	}
	want := []syscall.Errno{0, 0, 0, syscall.EACCES, 0}
	if len(resp.Errnos) != len(want) || len(resp.Msgs) != len(want) {
		t.Fatalf("%d answers (%d messages) to %d items", len(resp.Errnos), len(resp.Msgs), len(want))
	}
	for i, w := range want {
		if syscall.Errno(resp.Errnos[i]) != w {
			t.Errorf("item %d (%v): errno %d (%s), want %d", i, req.Items[i].ID, resp.Errnos[i], resp.Msgs[i], w)
		}
	}
	refused := func(when string) {
		t.Helper()
		for _, id := range []rpc.ComponentID{a, b, never} {
			if _, err := h.writeTok(h.rw(id), id, 0, []byte("resurrected")); !errors.Is(err, syscall.ESTALE) {
				t.Errorf("%s: write to %v with a capability of its removed generation = %v, want ESTALE", when, id, err)
			}
			if _, err := os.Stat(h.s.ComponentPath(id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: component %v is on disk: %v", when, id, err)
			}
		}
	}
	refused("after the call")
	h.restart()
	refused("after a restart")
	got := make([]byte, 19)
	if n, err := h.readInto(h.rw(kept), kept, 0, got); err != nil || string(got[:n]) != "data of a component" {
		t.Errorf("the component whose removal was refused reads %q, %v", got[:n], err)
	}
	if _, err := os.Stat(h.s.ComponentPath(moved)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the moved copy is on disk: %v", err)
	}
	h.mustWrite(moved, 0, []byte("moved back")) // nothing revoked

	many := rpc.RemoveManyReq{Items: make([]rpc.DSReq, rpc.MaxRemoveMany+1)}
	for i := range many.Items {
		many.Items[i] = rpc.DSReq{Cap: h.adminOf(kept), ID: kept}
	}
	if err := h.c.Call(t.Context(), h.s.Addr(), rpc.DRemoveMany, &many, &resp); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a call naming %d components: %v, want EINVAL", len(many.Items), err)
	}
	if _, err := os.Stat(h.s.ComponentPath(kept)); err != nil {
		t.Errorf("a refused call removed a component: %v", err)
	}
}
