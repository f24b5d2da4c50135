package ds

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// scrubMDS takes heartbeats and scrub reports.
type scrubMDS struct {
	secret  []byte
	mu      sync.Mutex
	reports []rpc.ScrubReportReq
	addr    string
}

func startScrubMDS(t *testing.T, secret []byte) *scrubMDS {
	t.Helper()
	f := &scrubMDS{secret: secret}
	mux := rpc.NewMux()
	rpc.Handle(mux, rpc.MHeartbeat, func(_ context.Context, _ *rpc.HeartbeatReq) (*rpc.HeartbeatResp, error) {
		return &rpc.HeartbeatResp{IntervalMs: 100}, nil
	})
	rpc.Handle(mux, rpc.MScrubReport, func(_ context.Context, r *rpc.ScrubReportReq) (*rpc.Empty, error) {
		f.mu.Lock()
		secret := f.secret
		f.mu.Unlock()
		if err := r.Cap.Verify(secret, time.Now(), 0, 0, capability.OpAdmin); err != nil {
			return nil, rpc.Errorf(syscall.EACCES, err.Error())
		}
		f.mu.Lock()
		f.reports = append(f.reports, *r)
		f.mu.Unlock()
		return &rpc.Empty{}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.NewServer(mux, nil, rpc.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Shutdown() })
	f.addr = ln.Addr().String()
	return f
}

func (f *scrubMDS) got() []rpc.ScrubReportReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reports)
}

// TestScrub: a pass started on demand verifies every block of every
// component, reports the component with a flipped bit (with the bad
// block's index) to the MDS, and a later pass reports it clean once the
// block was rewritten. Starting a pass needs an admin capability.
func TestScrub(t *testing.T) {
	mds := startScrubMDS(t, nil)
	h := newHarness(t, func(c *Config, _ *Deps) {
		c.MDS = mds.addr
		c.ScrubInterval = -1
		c.ScrubRate = -1
		c.HeartbeatInterval = 100 * time.Millisecond
	})
	mds.mu.Lock()
	mds.secret = h.secret
	mds.mu.Unlock()
	a := rpc.ComponentID{Ino: 7, Gen: 1, Col: 2}
	b := rpc.ComponentID{Ino: 8, Gen: 1, Col: 0}
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096*3/16+40) // 3 blocks and part of a 4th
	h.mustWrite(a, 0, data)
	h.mustWrite(b, 0, data[:5000])
	flipFileBit(t, h.s.ComponentPath(a), 4096+17) // block 1

	var st rpc.DSScrubStatus
	if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DScrubStart, &rpc.ScrubStartReq{Cap: h.rw(a)}, &st); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("scrub start with a read-write token: %v, want EACCES", err)
	}
	pass := func(n uint64) rpc.DSScrubStatus {
		t.Helper()
		if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DScrubStart, &rpc.ScrubStartReq{Cap: h.admin()}, &st); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DScrubStatus, &rpc.Empty{}, &st); err != nil {
				t.Fatal(err)
			}
			if st.Passes >= n && st.State == "idle" {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("scrub pass %d not done after a minute: %+v", n, st)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	st = pass(1)
	if st.Components != 2 || st.Bytes != uint64(len(data)+5000) || st.BadBlocks != 1 {
		t.Errorf("after pass 1: %+v, want 2 components, %d bytes, 1 bad block", st, len(data)+5000)
	}
	reps := mds.got()
	if len(reps) != 1 || reps[0].ID != a || !slices.Equal(reps[0].Blocks, []uint64{1}) || reps[0].Clean || reps[0].DS != "ds1" || reps[0].BlockSize != 4096 {
		t.Fatalf("reports after pass 1: %+v, want block 1 of %v", reps, a)
	}
	if _, err := h.read(a, 4096, 10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of the bad block: %v, want EIO", err)
	}
	h.mustWrite(a, 4096, data[4096:8192]) // a whole block: a new checksum
	pass(2)
	reps = mds.got()
	if len(reps) != 2 || reps[1].ID != a || !reps[1].Clean {
		t.Fatalf("reports after pass 2: %+v, want %v clean", reps, a)
	}
	if got := h.mustRead(a, 0, uint64(len(data))); !bytes.Equal(got, data) {
		t.Fatal("component differs after the rewrite")
	}
	// A check of one component (a client read a bad block in it) reports
	// it without a pass.
	flipFileBit(t, h.s.ComponentPath(b), 4100) // block 1
	if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DScrubStart, &rpc.ScrubStartReq{Cap: h.admin(), Comps: []rpc.ComponentID{b}}, &st); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(mds.got()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no report of the checked component: %+v", mds.got())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := mds.got()[2]; r.ID != b || !slices.Equal(r.Blocks, []uint64{1}) {
		t.Fatalf("check of %v reported %+v", b, r)
	}
	if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DScrubStatus, &rpc.Empty{}, &st); err != nil || st.Passes != 2 {
		t.Fatalf("a check counted as a pass: %+v %v", st, err)
	}
}

func flipFileBit(t *testing.T, path string, off int64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, 1)
	if _, err := fh.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x08
	if _, err := fh.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestParseComponentName: data file names parse, everything else in the
// store's directories does not.
func TestParseComponentName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		want rpc.ComponentID
	}{
		{"12.3.4", true, rpc.ComponentID{Ino: 12, Gen: 3, Col: 4}},
		{"12.3.4.crc", false, rpc.ComponentID{}},
		{"12.3", false, rpc.ComponentID{}},
		{"a.b.c", false, rpc.ComponentID{}},
		{"1.1.99999999999", false, rpc.ComponentID{}},
	} {
		got, ok := parseComponentName(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
