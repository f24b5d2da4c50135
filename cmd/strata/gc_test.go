package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/testcluster"
)

// TestAdminGC: `strata admin gc` finds the components no inode references
// — one of an inode that does not exist (a removal that never reached its
// data server) and a copy of a live file's component on a data server its
// layout does not name — reports them, removes them (not with --dry-run),
// and leaves every file readable.
func TestAdminGC(t *testing.T) {
	cl := testcluster.Start(t, 2)
	env := envOf(cl)
	ctx := testcluster.Context(t, 2*time.Minute)
	c := cl.Client()
	data := bytes.Repeat([]byte("keep me "), 20000)
	f, err := c.OpenFileLayout(ctx, "/keep", os.O_RDWR|os.O_CREATE, 0o644, "width=1,unit=64K")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := c.GetLayout(ctx, "/keep")
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Stat(ctx, "/keep")
	if err != nil {
		t.Fatal(err)
	}
	other := 1 - cl.DSIndex(info.Layout.Targets[0]) // the data server without /keep

	// Plant the garbage on the other data server, as a client holding a
	// capability would have written it.
	rc := rpc.NewClient(rpc.ClientConfig{})
	defer rc.Close()
	plant := func(id rpc.ComponentID, p []byte) string {
		t.Helper()
		tok := capability.Token{Ino: id.Ino, Gen: id.Gen, Ops: capability.OpWrite, Expiry: time.Now().Add(time.Minute).UnixNano()}
		tok.Sign(cl.Secret())
		req := rpc.DSReq{Cap: tok, ID: id, Sums: rpc.AppendSums(nil, 0, p)}
		if _, err := rc.CallData(context.Background(), cl.DSAddr(other), rpc.DWrite, &req, p, &rpc.DSResp{}, nil); err != nil {
			t.Fatal(err)
		}
		return cl.DS(other).ComponentPath(id)
	}
	ghost := plant(rpc.ComponentID{Ino: 1 << 40, Gen: 1}, []byte("nobody's"))
	stray := plant(rpc.ComponentID{Ino: a.Ino, Gen: info.Layout.Generation}, data[:1000])
	exists := func(p string) bool {
		_, err := os.Stat(p)
		return !errors.Is(err, os.ErrNotExist)
	}

	out := strata(t, env, "admin", "gc", "--dry-run").ok(t).stdout
	for _, want := range []string{"unreferenced: 2 component(s)", "dry run: nothing removed",
		"1099511627776.1.0", "no such inode", "component 0 of the file is on " + info.Layout.Targets[0]} {
		if !strings.Contains(out, want) {
			t.Errorf("gc --dry-run: no %q in:\n%s", want, out)
		}
	}
	if !exists(ghost) || !exists(stray) {
		t.Fatal("gc --dry-run removed a component")
	}

	out = strata(t, env, "admin", "gc").ok(t).stdout
	t.Logf("strata admin gc:\n%s", out)
	if !strings.Contains(out, "unreferenced: 2 component(s)") || !strings.Contains(out, "removed 2") || strings.Contains(out, "no:") {
		t.Errorf("gc:\n%s", out)
	}
	if exists(ghost) || exists(stray) {
		t.Errorf("gc left the garbage: %s %v, %s %v", ghost, exists(ghost), stray, exists(stray))
	}
	r, err := c.Open(ctx, "/keep")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("/keep after gc: %d bytes, %v", len(got), err)
	}
	out = strata(t, env, "admin", "gc").ok(t).stdout
	if !strings.Contains(out, "unreferenced: 0 component(s)") || strings.Count(out, "scanned") != 2 {
		t.Errorf("gc after gc:\n%s", out)
	}
}
