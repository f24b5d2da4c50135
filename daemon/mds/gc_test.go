package mds

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// fakeDS is a data server that only answers DRemove, and DRemoveMany if
// many is set (else it is an older one): a peer whose faults the test
// controls.
type fakeDS struct {
	addr  string
	clock func() time.Time

	mu      sync.Mutex
	fail    bool                     // answer EIO
	calls   map[rpc.ComponentID]int  // removals asked per component
	removed map[rpc.ComponentID]bool // answered with success
	badCaps []error                  // tokens that did not verify
	many    int                      // DRemoveMany calls
	single  int                      // DRemove calls
}

func startFakeDS(t *testing.T, clock func() time.Time, many bool) *fakeDS {
	t.Helper()
	f := &fakeDS{clock: clock, calls: map[rpc.ComponentID]int{}, removed: map[rpc.ComponentID]bool{}}
	mux := rpc.NewMux()
	rpc.Handle(mux, rpc.DRemove, func(_ context.Context, r *rpc.DSReq) (*rpc.DSResp, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.single++
		if err := f.removeLocked(r); err != nil {
			return nil, err
		}
		return &rpc.DSResp{}, nil
	})
	if many {
		rpc.Handle(mux, rpc.DRemoveMany, func(_ context.Context, r *rpc.RemoveManyReq) (*rpc.RemoveManyResp, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.many++
			resp := &rpc.RemoveManyResp{Errnos: make([]uint32, len(r.Items)), Msgs: make([]string, len(r.Items))}
			for i := range r.Items {
				if err := f.removeLocked(&r.Items[i]); err != nil {
					resp.Errnos[i], resp.Msgs[i] = err.Errno, err.Msg
				}
			}
			return resp, nil
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.NewServer(mux, slog.New(slog.DiscardHandler), rpc.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	f.addr = ln.Addr().String()
	return f
}

// removeLocked is one removal as the fake answers it; f.mu is held.
func (f *fakeDS) removeLocked(r *rpc.DSReq) *rpc.Error {
	f.calls[r.ID]++
	if err := r.Cap.Verify(testSecret(), f.clock(), r.ID.Ino, r.ID.Gen, capability.OpAdmin); err != nil || r.Cap.Ops != capability.OpAdmin {
		f.badCaps = append(f.badCaps, err)
		return rpc.Errorf(syscall.EACCES, "bad capability")
	}
	if f.fail {
		return rpc.Errorf(syscall.EIO, "injected failure")
	}
	f.removed[r.ID] = true
	return nil
}

// methods returns the DRemoveMany and DRemove calls f got.
func (f *fakeDS) methods() (many, single int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.many, f.single
}

func (f *fakeDS) setFail(v bool) {
	f.mu.Lock()
	f.fail = v
	f.mu.Unlock()
}

func (f *fakeDS) callsTo(id rpc.ComponentID) (calls int, removed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id], f.removed[id]
}

func (m *tmds) orphaned(ino uint64) bool {
	m.fsm.mu.RLock()
	defer m.fsm.mu.RUnlock()
	for k := range m.fsm.st.orphans {
		if k.Ino == ino {
			return true
		}
	}
	return false
}

func TestOrphanGC(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	advance := func(d time.Duration) { now.Add(int64(d)) }

	cfg := testConfig(t.TempDir())
	cfg.InlineMax = DefaultInlineMax
	s, err := New(cfg, Deps{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := &tmds{Server: s, t: t, c: testClient(0)}
	t.Cleanup(func() {
		m.c.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	<-s.Ready()
	// fa removes many components in one call, fb (an older data
	// server) one per call.
	ds := map[string]*fakeDS{"fa": startFakeDS(t, clock, true), "fb": startFakeDS(t, clock, false)}
	beat := func(ids ...string) {
		for _, id := range ids {
			m.beat(id, "node-"+id, ds[id].addr)
		}
	}
	beat("fa", "fb")
	component := func(l rpc.Layout, id string) rpc.ComponentID {
		for col, t := range l.Targets {
			if t == id {
				return rpc.ComponentID{Ino: 0, Gen: l.Generation, Col: uint32(col)}
			}
		}
		t.Fatalf("layout %+v has no column on %s", l, id)
		return rpc.ComponentID{}
	}
	newFile := func(name string) (uint64, map[string]rpc.ComponentID) {
		ino := m.createF(rpc.RootIno, name, "width=2")
		l := m.layoutOf(ino, false).Layout
		comps := map[string]rpc.ComponentID{}
		for id := range ds {
			c := component(l, id)
			c.Ino = ino
			comps[id] = c
		}
		return ino, comps
	}
	unlink := func(name string) {
		must[rpc.Empty](m, rpc.MUnlink, &rpc.EntryReq{Parent: rpc.RootIno, Name: name})
	}

	// Unlink: each column's component is removed on its own data server.
	f1, c1 := newFile("f1")
	unlink("f1")
	eventually(t, 10*time.Second, "f1 purged", func() bool { return !m.orphaned(f1) })
	for id, c := range c1 {
		if n, ok := ds[id].callsTo(c); !ok || n != 1 {
			t.Errorf("%s: component %+v: %d calls, removed %v", id, c, n, ok)
		}
	}

	// An inline file's removal calls no data server: its components were
	// never written. A file on the data servers removed after it is
	// collected in the same round or a later one.
	cr := must[rpc.CreateResp](m, rpc.MCreate, &rpc.CreateReq{Parent: rpc.RootIno, Name: "small", Mode: 0o644, Layout: "width=2", Exclusive: true, Inline: true})
	lg := must[rpc.LayoutGetResp](m, rpc.MLayoutGet, &rpc.LayoutGetReq{Ino: cr.Attr.Ino, Write: true, Inline: true})
	if lg.Inline == nil {
		t.Fatal("a file created inline is not inline")
	}
	must[rpc.InlineWriteResp](m, rpc.MInlineWrite, &rpc.InlineWriteReq{Ino: cr.Attr.Ino, Data: []byte("small"), Cap: lg.Cap})
	unlink("small")
	if m.orphaned(cr.Attr.Ino) {
		t.Error("an unlinked inline file's layout is queued for collection")
	}
	after, cAfter := newFile("after")
	unlink("after")
	eventually(t, 10*time.Second, "the file unlinked after the inline one purged", func() bool { return !m.orphaned(after) })
	for id, c := range cAfter {
		if _, ok := ds[id].callsTo(c); !ok {
			t.Errorf("%s: component %+v of the file on the data servers not removed", id, c)
		}
	}
	for col, id := range lg.Layout.Targets {
		c := rpc.ComponentID{Ino: cr.Attr.Ino, Gen: lg.Layout.Generation, Col: uint32(col)}
		if n, _ := ds[id].callsTo(c); n != 0 {
			t.Errorf("%s: %d removal calls for column %d of the inline file", id, n, col)
		}
	}

	// A failing data server: the orphan stays queued and is retried.
	ds["fa"].setFail(true)
	f2, c2 := newFile("f2")
	unlink("f2")
	eventually(t, 10*time.Second, "a first removal attempt on fa", func() bool { n, _ := ds["fa"].callsTo(c2["fa"]); return n >= 1 })
	if !m.orphaned(f2) {
		t.Fatal("f2 purged although fa failed")
	}
	for i := 0; i < 2; i++ {
		advance(time.Second) // past the backoff
		beat("fa", "fb")
	}
	eventually(t, 10*time.Second, "a retry on fa", func() bool { n, _ := ds["fa"].callsTo(c2["fa"]); return n >= 2 })
	ds["fa"].setFail(false)
	eventually(t, 10*time.Second, "f2 purged after fa recovered", func() bool {
		advance(time.Second)
		beat("fa", "fb")
		return !m.orphaned(f2)
	})
	if _, ok := ds["fa"].callsTo(c2["fa"]); !ok {
		t.Error("f2's component on fa was never removed")
	}

	// A data server that is down: its components wait until it is back.
	f3, c3 := newFile("f3")
	advance(3 * time.Second) // fb silent for longer than the 2s timeout
	beat("fa")
	unlink("f3")
	eventually(t, 10*time.Second, "f3's component on fa removed", func() bool { _, ok := ds["fa"].callsTo(c3["fa"]); return ok })
	if n, _ := ds["fb"].callsTo(c3["fb"]); n != 0 || !m.orphaned(f3) {
		t.Fatalf("fb is down but got %d calls; orphaned %v", n, m.orphaned(f3))
	}
	beat("fb") // back: the heartbeat wakes the collector
	eventually(t, 10*time.Second, "f3 purged after fb came back", func() bool { return !m.orphaned(f3) })
	// The data server that removes many components per call got no
	// other call; the older one got one per component.
	if many, single := ds["fa"].methods(); many == 0 || single != 0 {
		t.Errorf("fa: %d DRemoveMany and %d DRemove calls, want only DRemoveMany", many, single)
	}
	if many, single := ds["fb"].methods(); many != 0 || single == 0 {
		t.Errorf("fb (older): %d DRemoveMany and %d DRemove calls, want only DRemove", many, single)
	}
	for id, f := range ds {
		f.mu.Lock()
		if len(f.badCaps) > 0 {
			t.Errorf("%s refused capabilities: %v", id, f.badCaps)
		}
		f.mu.Unlock()
	}
}
