package ds

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

const bs = 4096 // the harness's block size

type step struct {
	op   string // write, truncate
	off  int    // write offset
	n    int    // write length or truncate size
	seed uint64
}

// TestWriteRead applies sequences of writes and truncates and checks that
// the whole component and ranges across every block edge read back as
// the model says.
func TestWriteRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one byte", []step{{op: "write", off: 0, n: 1}}},
		{"aligned blocks", []step{{op: "write", off: 0, n: 3 * bs}}},
		{"unaligned across blocks", []step{{op: "write", off: 100, n: 3*bs + 17}}},
		{"overwrite middle unaligned", []step{
			{op: "write", off: 0, n: 4 * bs, seed: 1},
			{op: "write", off: bs - 7, n: 2*bs + 14, seed: 2},
		}},
		{"overwrite inside one block", []step{
			{op: "write", off: 0, n: 2 * bs, seed: 1},
			{op: "write", off: bs + 10, n: 20, seed: 2},
		}},
		{"hole before data", []step{{op: "write", off: 5*bs + 123, n: 1000}}},
		{"sparse extension", []step{
			{op: "write", off: 0, n: 1000, seed: 1},
			{op: "write", off: 10*bs + 5, n: 10, seed: 2},
			{op: "write", off: 3 * bs, n: bs, seed: 3},
		}},
		{"append in pieces", []step{
			{op: "write", off: 0, n: 1000, seed: 1},
			{op: "write", off: 1000, n: 5000, seed: 2},
			{op: "write", off: 6000, n: 3000, seed: 3},
		}},
		{"truncate down then extend reads zeros", []step{
			{op: "write", off: 0, n: 3 * bs, seed: 1},
			{op: "truncate", n: bs + 100},
			{op: "truncate", n: 3 * bs},
		}},
		{"truncate down then write past the cut", []step{
			{op: "write", off: 0, n: 3 * bs, seed: 1},
			{op: "truncate", n: 1000},
			{op: "write", off: 2*bs + 1, n: 10, seed: 2},
		}},
		{"truncate up from empty", []step{{op: "truncate", n: 2*bs + 3}}},
		{"truncate to zero", []step{
			{op: "write", off: 0, n: 2 * bs, seed: 1},
			{op: "truncate", n: 0},
			{op: "write", off: 10, n: 10, seed: 2},
		}},
		{"write into the extended part", []step{
			{op: "write", off: 0, n: 100, seed: 1},
			{op: "truncate", n: 3 * bs},
			{op: "write", off: bs + 50, n: 100, seed: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id := rpc.ComponentID{Ino: 7, Gen: 1, Col: 2}
			var m model
			for _, s := range tc.steps {
				switch s.op {
				case "write":
					p := randBytes(rand.New(rand.NewPCG(s.seed, 9)), s.n)
					size, err := h.write(id, uint64(s.off), p)
					m.write(s.off, p)
					if err != nil || size != uint64(len(m)) {
						t.Fatalf("write(%d, %d) = %d, %v; want size %d", s.off, s.n, size, err, len(m))
					}
				case "truncate":
					size, err := h.call(rpc.DTruncate, h.rw(id), id, uint64(s.n))
					m.truncate(s.n)
					if err != nil || size != uint64(s.n) {
						t.Fatalf("truncate(%d) = %d, %v", s.n, size, err)
					}
				}
			}
			checkModel(t, h, id, m)
		})
	}
}

// checkModel reads the whole component, and ranges starting and ending
// around every block edge, and compares them with m.
func checkModel(t *testing.T, h *harness, id rpc.ComponentID, m model) {
	t.Helper()
	if got := h.stat(id); got != uint64(len(m)) {
		t.Fatalf("stat = %d, want %d", got, len(m))
	}
	if d := diff(h.mustRead(id, 0, uint64(len(m))+100), m); d != "" {
		t.Fatalf("whole read: %s", d)
	}
	for edge := 0; edge <= len(m)+bs; edge += bs {
		for _, off := range []int{edge - 1, edge, edge + 1} {
			if off < 0 {
				continue
			}
			for _, n := range []int{1, 2, bs - 1, bs + 2, 2*bs + 1} {
				if d := diff(h.mustRead(id, uint64(off), uint64(n)), m.read(off, n)); d != "" {
					t.Fatalf("read(%d, %d): %s", off, n, d)
				}
			}
		}
	}
}

// TestRandomOps runs a seeded random mix of operations against the model.
func TestRandomOps(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 3, Gen: 2}
	var m model
	for i := range 150 {
		switch r.IntN(4) {
		case 0, 1:
			off, n := r.IntN(12*bs), r.IntN(3*bs)
			p := randBytes(r, n)
			if _, err := h.write(id, uint64(off), p); err != nil {
				t.Fatalf("op %d (seed %d): write(%d, %d): %v", i, seed, off, n, err)
			}
			m.write(off, p)
		case 2:
			size := r.IntN(14 * bs)
			if _, err := h.call(rpc.DTruncate, h.rw(id), id, uint64(size)); err != nil {
				t.Fatalf("op %d (seed %d): truncate(%d): %v", i, seed, size, err)
			}
			m.truncate(size)
		case 3:
			off, n := r.IntN(14*bs), r.IntN(4*bs)
			if d := diff(h.mustRead(id, uint64(off), uint64(n)), m.read(off, n)); d != "" {
				t.Fatalf("op %d (seed %d): read(%d, %d): %s", i, seed, off, n, d)
			}
		}
	}
	if d := diff(h.mustRead(id, 0, uint64(len(m))), m); d != "" {
		t.Fatalf("seed %d: final read: %s", seed, d)
	}
}

func TestMissingComponent(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 9, Gen: 1}
	if b := h.mustRead(id, 0, 100); len(b) != 0 {
		t.Fatalf("read of a missing component = %d bytes", len(b))
	}
	if got := h.stat(id); got != 0 {
		t.Fatalf("stat = %d", got)
	}
	if _, err := h.call(rpc.DCommit, h.rw(id), id, 0); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if _, err := h.call(rpc.DRemove, h.adminOf(id), id, 0); err != nil {
		t.Fatalf("remove of a missing component: %v", err)
	}
	if _, err := os.Stat(h.s.ComponentPath(id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reads created the component: %v", err)
	}
}

func TestRemove(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 9, Gen: 1, Col: 1}
	h.mustWrite(id, 0, bytes.Repeat([]byte{1}, 3*bs))
	if _, err := h.call(rpc.DRemove, h.adminOf(id), id, 0); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if got := h.stat(id); got != 0 {
		t.Fatalf("stat after remove = %d", got)
	}
	for _, p := range []string{h.s.ComponentPath(id), h.s.ComponentPath(id) + crcSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after remove: %v", p, err)
		}
	}
	// A new component of the same id starts empty, holes included.
	h.mustWrite(id, 2*bs, []byte("x"))
	if d := diff(h.mustRead(id, 0, 3*bs), append(make([]byte, 2*bs), 'x')); d != "" {
		t.Fatalf("recreated component: %s", d)
	}
}

func TestAccessDenied(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 7, Gen: 3}
	orig := bytes.Repeat([]byte("strata"), 1000)
	h.mustWrite(id, 0, orig)

	other, _ := capability.NewSecret()
	forged := capability.Token{Ino: 7, Gen: 3, Ops: capability.OpRead | capability.OpWrite | capability.OpAdmin, Expiry: time.Now().Add(time.Hour).UnixNano()}
	forged.Sign(other)
	escalated := h.token(7, 3, capability.OpRead)
	escalated.Ops |= capability.OpWrite // not re-signed
	expired := capability.Token{Ino: 7, Gen: 3, Ops: capability.OpRead | capability.OpWrite, Expiry: time.Now().Add(-time.Second).UnixNano()}
	expired.Sign(h.secret)
	readOnly := h.token(7, 3, capability.OpRead)
	rw := h.rw(id)

	for _, tc := range []struct {
		name   string
		method string
		tok    capability.Token
	}{
		{"forged write", rpc.DWrite, forged},
		{"forged read", rpc.DRead, forged},
		{"forged remove", rpc.DRemove, forged},
		{"escalated write", rpc.DWrite, escalated},
		{"unsigned read", rpc.DRead, capability.Token{Ino: 7, Gen: 3, Ops: capability.OpRead, Expiry: time.Now().Add(time.Hour).UnixNano()}},
		{"expired read", rpc.DRead, expired},
		{"expired write", rpc.DWrite, expired},
		{"other inode read", rpc.DRead, h.token(8, 3, capability.OpRead|capability.OpWrite)},
		{"other inode write", rpc.DWrite, h.token(8, 3, capability.OpRead|capability.OpWrite)},
		{"other generation write", rpc.DWrite, h.token(7, 4, capability.OpRead|capability.OpWrite)},
		{"read-only write", rpc.DWrite, readOnly},
		{"read-only truncate", rpc.DTruncate, readOnly},
		{"read-only commit", rpc.DCommit, readOnly},
		{"write-only read", rpc.DRead, h.token(7, 3, capability.OpWrite)},
		{"write-only stat", rpc.DStat, h.token(7, 3, capability.OpWrite)},
		{"non-admin remove", rpc.DRemove, rw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			out := make([]byte, 100)
			switch tc.method {
			case rpc.DWrite:
				_, err = h.writeTok(tc.tok, id, 10, []byte("overwritten"))
			case rpc.DRead:
				var n int
				n, err = h.readInto(tc.tok, id, 0, out)
				if n != 0 || !bytes.Equal(out, make([]byte, 100)) {
					t.Errorf("refused read returned %d bytes", n)
				}
			default:
				_, err = h.call(tc.method, tc.tok, id, 1) // truncate would cut to 1 byte
			}
			if !errors.Is(err, syscall.EACCES) {
				t.Fatalf("%s = %v, want EACCES", tc.method, err)
			}
			var re *rpc.Error
			if !errors.As(err, &re) || re.Msg[:4] != "ds: " {
				t.Errorf("error %q lacks the ds: prefix", err)
			}
			if d := diff(h.mustRead(id, 0, 1<<20), orig); d != "" {
				t.Fatalf("component changed: %s", d)
			}
		})
	}
}

func TestChecksumMismatch(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 11, Gen: 1}
	orig := randBytes(rand.New(rand.NewPCG(1, 2)), 4*bs)
	h.mustWrite(id, 0, orig)
	flipBit(t, h.s.ComponentPath(id), 2*bs+100)

	for _, r := range []struct{ off, n uint64 }{
		{0, 4 * bs},        // everything
		{2 * bs, bs},       // the block
		{2*bs + 100, 1},    // the flipped byte
		{2*bs + 200, 10},   // another byte of the block
		{bs + 5, bs},       // ends in the block
		{3*bs - 1, bs + 1}, // starts in the block
	} {
		out := bytes.Repeat([]byte{0xAA}, int(r.n))
		n, err := h.readInto(h.rw(id), id, r.off, out)
		if !errors.Is(err, syscall.EIO) || n != 0 {
			t.Fatalf("read(%d, %d) of a corrupt block = %d bytes, %v; want EIO", r.off, r.n, n, err)
		}
		if !bytes.Equal(out, bytes.Repeat([]byte{0xAA}, int(r.n))) {
			t.Fatalf("read(%d, %d) of a corrupt block returned data", r.off, r.n)
		}
		if want := "ds: checksum mismatch in component 11.1.0 block 2"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
	for _, r := range []struct{ off, n uint64 }{{0, 2 * bs}, {3 * bs, bs}, {bs + 7, bs - 7}, {3*bs + 1, 100}} {
		if d := diff(h.mustRead(id, r.off, r.n), orig[r.off:r.off+r.n]); d != "" {
			t.Fatalf("read(%d, %d) of a good block: %s", r.off, r.n, d)
		}
	}
	// A partial write into the corrupt block and a truncate cutting it
	// fail instead of blessing it with a new CRC.
	if _, err := h.write(id, 2*bs+10, []byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("partial write into a corrupt block = %v, want EIO", err)
	}
	if _, err := h.call(rpc.DTruncate, h.rw(id), id, 2*bs+50); !errors.Is(err, syscall.EIO) {
		t.Fatalf("truncate cutting a corrupt block = %v, want EIO", err)
	}
	if _, err := h.read(id, 2*bs, bs); !errors.Is(err, syscall.EIO) {
		t.Fatalf("corrupt block healed by a failed write: %v", err)
	}
	// Overwriting the whole block repairs it.
	h.mustWrite(id, 2*bs, orig[2*bs:3*bs])
	if d := diff(h.mustRead(id, 0, 4*bs), orig); d != "" {
		t.Fatalf("after repair: %s", d)
	}
	// A corrupt checksum is caught as well.
	flipBit(t, h.s.ComponentPath(id)+crcSuffix, 4*1+2)
	if _, err := h.read(id, bs, 1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read under a corrupt checksum = %v, want EIO", err)
	}
}

// TestHoleChecksum: a flipped bit in a never-written block is caught too.
func TestHoleChecksum(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 12, Gen: 1}
	h.mustWrite(id, 3*bs, []byte("end"))
	flipBit(t, h.s.ComponentPath(id), bs+1)
	if _, err := h.read(id, bs, 10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a corrupt hole = %v, want EIO", err)
	}
	if d := diff(h.mustRead(id, 0, bs), make([]byte, bs)); d != "" {
		t.Fatalf("hole: %s", d)
	}
}

func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestRestart(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.Capacity = 1 << 20 })
	r := rand.New(rand.NewPCG(5, 5))
	want := map[rpc.ComponentID][]byte{}
	for i := range 5 {
		id := rpc.ComponentID{Ino: uint64(300 + i*256), Gen: 1, Col: uint32(i)} // same subdirectory
		p := randBytes(r, 1000+i*3000)
		h.mustWrite(id, uint64(i*100), p)
		want[id] = append(make([]byte, i*100), p...)
		if _, err := h.call(rpc.DCommit, h.rw(id), id, 0); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	before := h.info()
	h.restart()
	for id, p := range want {
		if d := diff(h.mustRead(id, 0, 1<<20), p); d != "" {
			t.Fatalf("%v after restart: %s", id, d)
		}
	}
	if after := h.info(); after != before {
		t.Fatalf("info after restart = %+v, before %+v", after, before)
	}

	// The directory belongs to ds1 with 4 KiB blocks.
	h.s.Close()
	for _, mod := range []func(*Config){
		func(c *Config) { c.ID = "ds2" },
		func(c *Config) { c.BlockSize = 8192 },
	} {
		cfg := h.cfg
		mod(&cfg)
		if _, err := New(cfg, Deps{}); !errors.Is(err, ErrFormat) {
			t.Errorf("New with %s/%d on ds1's dir = %v, want ErrFormat", cfg.ID, cfg.BlockSize, err)
		}
	}
}

// TestCapacity: the capacity counts the bytes components hold on disk
// (sizes here are whole file-system blocks): a write past it is ENOSPC,
// a sparse truncate costs nothing, overwrites need no space and a remove
// gives its space back.
func TestCapacity(t *testing.T) {
	const fsb = 4096
	h := newHarness(t, func(c *Config, _ *Deps) { c.Capacity = 10 * fsb })
	a, b := rpc.ComponentID{Ino: 1, Gen: 1}, rpc.ComponentID{Ino: 2, Gen: 1}
	h.mustWrite(a, 0, bytes.Repeat([]byte{1}, 8*fsb))
	if got := h.info(); got.Capacity != 10*fsb || got.Free != 2*fsb || got.ID != "ds1" {
		t.Fatalf("info = %+v, want capacity %d, free %d", got, 10*fsb, 2*fsb)
	}
	if _, err := h.write(a, 7*fsb, make([]byte, 3*fsb+1)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past capacity = %v, want ENOSPC", err)
	}
	if _, err := h.write(b, 0, make([]byte, 2*fsb+1)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write of a second component past capacity = %v, want ENOSPC", err)
	}
	if got := h.stat(a); got != 8*fsb {
		t.Fatalf("size after a refused write = %d", got)
	}
	if got := h.stat(b); got != 0 {
		t.Fatalf("size of b after a refused write = %d", got)
	}
	// A truncate far past the capacity makes a hole: it succeeds and
	// takes no space.
	if _, err := h.call(rpc.DTruncate, h.rw(b), b, 1<<40); err != nil {
		t.Fatalf("sparse truncate past capacity: %v", err)
	}
	if got := h.info(); got.Free != 2*fsb {
		t.Fatalf("free after a sparse truncate to 1 TiB = %d, want %d", got.Free, 2*fsb)
	}
	if _, err := h.call(rpc.DTruncate, h.rw(b), b, 5*fsb); err != nil {
		t.Fatal(err)
	}
	h.mustWrite(a, 0, bytes.Repeat([]byte{2}, 8*fsb)) // overwrites need no space
	h.mustWrite(b, 0, make([]byte, 2*fsb))            // fills part of the hole
	if got := h.info(); got.Free != 0 {
		t.Fatalf("free = %d, want 0", got.Free)
	}
	if _, err := h.call(rpc.DTruncate, h.rw(a), a, fsb); err != nil {
		t.Fatal(err)
	}
	h.mustWrite(b, 2*fsb, make([]byte, 7*fsb))
	if _, err := h.call(rpc.DRemove, h.adminOf(b), b, 0); err != nil {
		t.Fatal(err)
	}
	if got := h.info(); got.Free != 9*fsb {
		t.Fatalf("free after remove = %d, want %d", got.Free, 9*fsb)
	}
}

// TestPunch: a punched range reads as zeros and its whole blocks are
// given back; the bytes around it, in the blocks it cuts, are kept and
// verified; the size is kept; a missing component stays missing.
func TestPunch(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.Capacity = 64 * bs })
	id := rpc.ComponentID{Ino: 3, Gen: 1}
	want := make([]byte, 16*bs+100)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	h.mustWrite(id, 0, want)
	before := h.info().Free
	punch := func(off, n uint64) {
		t.Helper()
		var r rpc.DSResp
		err := h.c.Call(t.Context(), h.s.Addr(), rpc.DPunch, &rpc.DSReq{Cap: h.rw(id), ID: id, Off: off, Len: n}, &r)
		if err != nil {
			t.Fatalf("punch %d at %d: %v", n, off, err)
		}
		if r.Size != uint64(len(want)) {
			t.Fatalf("punch %d at %d: size %d, want %d", n, off, r.Size, len(want))
		}
		clear(want[off:min(off+n, uint64(len(want)))])
	}
	punch(bs/2, 10*bs) // half a block, 9 whole ones, half a block
	if got := h.mustRead(id, 0, uint64(len(want))); !bytes.Equal(got, want) {
		t.Fatalf("after punch: %s", diff(got, want))
	}
	if freed := h.info().Free - before; freed < 9*bs {
		t.Fatalf("punching 9 whole blocks freed %d bytes, want at least %d", freed, 9*bs)
	}
	punch(15*bs, 1<<20) // through the end: the size is kept
	if got := h.mustRead(id, 0, 1<<20); !bytes.Equal(got, want) {
		t.Fatalf("after punch to the end: %s", diff(got, want))
	}
	missing := rpc.ComponentID{Ino: 4, Gen: 1}
	if _, err := h.call(rpc.DPunch, h.rw(missing), missing, 0); err != nil {
		t.Fatalf("punch of a missing component: %v", err)
	}
	if got := h.stat(missing); got != 0 {
		t.Fatalf("punch made a component of %d bytes", got)
	}
}

// TestConcurrentWriters has 8 writers interleave unaligned pieces that
// share blocks, while readers check that no read ever sees a half-updated
// block (which would fail its checksum).
func TestConcurrentWriters(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 21, Gen: 1}
	const writers, piece, rounds = 8, 1000, 12
	want := make([]byte, writers*piece*rounds)
	for i := range want {
		want[i] = byte(i*7 + i/piece)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for _, k := range r.Perm(rounds) {
				off := (k*writers + w) * piece
				if _, err := h.write(id, uint64(off), want[off:off+piece]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := h.read(id, 0, uint64(len(want))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d := diff(h.mustRead(id, 0, uint64(len(want))), want); d != "" {
		t.Fatalf("after concurrent writes: %s", d)
	}
}

// TestConcurrentFullBlocks: writers of whole disjoint blocks, out of order.
func TestConcurrentFullBlocks(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 22, Gen: 1}
	const writers, per = 4, 8
	want := randBytes(rand.New(rand.NewPCG(8, 8)), writers*per*bs)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for k := per - 1; k >= 0; k-- {
				off := (k*writers + w) * bs
				if _, err := h.write(id, uint64(off), want[off:off+bs]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if d := diff(h.mustRead(id, 0, uint64(len(want))), want); d != "" {
		t.Fatalf("after concurrent writes: %s", d)
	}
}

func TestDiskErrors(t *testing.T) {
	d := &faultDisk{}
	h := newHarness(t, func(_ *Config, deps *Deps) { deps.Disk = d })
	id := rpc.ComponentID{Ino: 31, Gen: 1}
	orig := randBytes(rand.New(rand.NewPCG(3, 1)), 2*bs)
	h.mustWrite(id, 0, orig)

	d.set(eioOn("write"), false)
	if _, err := h.write(id, 0, make([]byte, 10)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write on a failing disk = %v, want EIO", err)
	}
	d.set(eioOn("read"), false)
	if _, err := h.read(id, 0, 10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read on a failing disk = %v, want EIO", err)
	}
	d.set(eioOn("sync"), false)
	if _, err := h.call(rpc.DCommit, h.rw(id), id, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("commit on a failing disk = %v, want EIO", err)
	}
	d.set(eioOn("truncate"), false)
	if _, err := h.call(rpc.DTruncate, h.rw(id), id, 10); !errors.Is(err, syscall.EIO) {
		t.Fatalf("truncate on a failing disk = %v, want EIO", err)
	}
	d.set(nil, false)
	if d := diff(h.mustRead(id, 0, 2*bs), orig); d != "" {
		t.Fatalf("after failed calls: %s", d)
	}

	// A torn write (half of the bytes reach the disk, the checksums do
	// not) never reads back as data: the torn block fails, the untouched
	// one still reads.
	d.set(eioOn("write"), true)
	if _, err := h.write(id, 0, bytes.Repeat([]byte{0xEE}, 2*bs)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("torn write = %v, want EIO", err)
	}
	d.set(nil, false)
	if _, err := h.read(id, 0, bs); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read of a torn block = %v, want EIO", err)
	}
	if d := diff(h.mustRead(id, bs, bs), orig[bs:]); d != "" {
		t.Fatalf("block after the torn one: %s", d)
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t)
	id := rpc.ComponentID{Ino: 41, Gen: 1}
	tok := h.rw(id)
	for _, tc := range []struct {
		name string
		req  rpc.DSReq
		m    string
		data []byte
	}{
		{"write past max offset", rpc.DSReq{Off: maxOffset}, rpc.DWrite, []byte("x")},
		{"write offset overflow", rpc.DSReq{Off: 1<<64 - 1}, rpc.DWrite, []byte("x")},
		{"read too long", rpc.DSReq{Len: rpc.MaxData + 1}, rpc.DRead, nil},
		{"read offset overflow", rpc.DSReq{Off: 1<<64 - 10, Len: 100}, rpc.DRead, nil},
		{"read past max offset", rpc.DSReq{Off: maxOffset + 1, Len: 1}, rpc.DRead, nil},
		{"truncate past max offset", rpc.DSReq{Size: maxOffset + 1}, rpc.DTruncate, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Cap, tc.req.ID = tok, id
			var resp rpc.DSResp
			_, err := h.c.CallData(t.Context(), h.s.Addr(), tc.m, &tc.req, tc.data, &resp, nil)
			if !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("%s = %v, want EINVAL", tc.m, err)
			}
		})
	}
	if got := h.stat(id); got != 0 {
		t.Fatalf("bad requests made a component of %d bytes", got)
	}
}

func TestCacheEviction(t *testing.T) {
	h := newHarness(t)
	const n = maxOpen + 40
	for i := range n {
		id := rpc.ComponentID{Ino: uint64(i), Gen: 1}
		h.mustWrite(id, uint64(i), []byte{byte(i), byte(i >> 8)})
	}
	h.s.store.mu.Lock()
	open := len(h.s.store.open)
	h.s.store.mu.Unlock()
	if open > maxOpen {
		t.Fatalf("%d components open, want at most %d", open, maxOpen)
	}
	var used uint64
	for i := range n {
		id := rpc.ComponentID{Ino: uint64(i), Gen: 1}
		if got := h.mustRead(id, uint64(i), 10); !bytes.Equal(got, []byte{byte(i), byte(i >> 8)}) {
			t.Fatalf("component %d = %v", i, got)
		}
		used += onDisk(t, h.s.store, id)
	}
	if got, _ := h.s.store.usage(); got != used {
		t.Fatalf("used = %d, want %d", got, used)
	}
}

func TestStartClose(t *testing.T) {
	h := newHarness(t)
	if err := h.s.Start(t.Context()); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := h.s.Start(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close = %v", err)
	}
	// A server that never started closes cleanly too.
	s, err := New(h.cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
