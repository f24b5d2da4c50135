package ds

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// peerPair is a source data server holding copy 0 of a mirror:2 file and
// a target that rebuilds copy 1 from it, sharing one cluster secret.
type peerPair struct {
	src, dst *harness
	data     []byte
	id       rpc.ComponentID // the component rebuilt on dst
}

func newPeerPair(t *testing.T, dstOpts ...func(*Config, *Deps)) *peerPair {
	return newPeerPairWith(t, nil, dstOpts...)
}

// newPeerPairWith is newPeerPair with the source's options too.
func newPeerPairWith(t *testing.T, srcOpts []func(*Config, *Deps), dstOpts ...func(*Config, *Deps)) *peerPair {
	src := newHarness(t, srcOpts...)
	dst := newHarness(t, append([]func(*Config, *Deps){func(c *Config, _ *Deps) { c.ID, c.Secret = "ds2", src.secret }}, dstOpts...)...)
	dst.secret = src.secret
	data := randBytes(rand.New(rand.NewPCG(5, 6)), 300<<10+123)
	src.mustWrite(rpc.ComponentID{Ino: 40, Gen: 1, Col: 0}, 0, data)
	return &peerPair{src: src, dst: dst, data: data, id: rpc.ComponentID{Ino: 40, Gen: 1, Col: 1}}
}

// tok is the MDS's token for component col of the file on server ds.
func (p *peerPair) tok(ops capability.Op, col uint32, ds string, class uint8) capability.Token {
	t := capability.Token{Ino: 40, Gen: 1, Ops: ops, Class: class, Target: ds, Comp: col + 1, Expiry: time.Now().Add(time.Hour).UnixNano()}
	t.Sign(p.src.secret)
	return t
}

// call makes a rebuild call on the target with a good admin token unless
// req carries one.
func (p *peerPair) call(method string, req rpc.RebuildReq) (*rpc.RebuildResp, error) {
	req.ID = p.id
	if len(req.Cap.MAC) == 0 {
		req.Cap = p.tok(capability.OpAdmin, 1, "ds2", rpc.ClassRebuild)
	}
	var resp rpc.RebuildResp
	err := p.dst.c.Call(context.Background(), p.dst.s.Addr(), method, &req, &resp)
	return &resp, err
}

// window is the DRebuild request of [off, off+n) copied from the source.
func (p *peerPair) window(off, n uint64) rpc.RebuildReq {
	return rpc.RebuildReq{
		Off: off, Len: n, Scheme: "mirror:2", Width: 1, Unit: 64 << 10, FileSize: uint64(len(p.data)),
		Sources: []rpc.RebuildSource{{Col: 0, DS: "ds1", Addr: p.src.s.Addr(), Cap: p.tok(capability.OpRead, 0, "ds1", rpc.ClassRebuild)}},
	}
}

// TestRebuildFromPeer: a data server copies a component from another, in
// windows, into a staged copy that no read sees; published, the component
// holds the source's bytes. A staged copy survives a restart and is
// resumed; one that is gone cannot be resumed.
func TestRebuildFromPeer(t *testing.T) {
	p := newPeerPair(t)
	size := uint64(len(p.data))
	if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{Off: 64 << 10}); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("resume of a staged copy that does not exist: %v; want ENOENT", err)
	}
	if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{}); err != nil {
		t.Fatal(err)
	}
	half := uint64(128 << 10)
	if _, err := p.call(rpc.DRebuild, p.window(0, half)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.call(rpc.DStageCommit, rpc.RebuildReq{}); err != nil {
		t.Fatal(err)
	}
	if got := p.dst.stat(p.id); got != 0 {
		t.Fatalf("the component has %d bytes before it is published", got)
	}
	p.dst.restart()
	if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{Off: half}); err != nil {
		t.Fatalf("resume after a restart: %v", err)
	}
	if _, err := p.call(rpc.DRebuild, p.window(half, size-half)); err != nil {
		t.Fatal(err)
	}
	if got := p.dst.stat(p.id); got != 0 {
		t.Fatalf("the component has %d bytes before it is published", got)
	}
	if _, err := p.call(rpc.DStagePublish, rpc.RebuildReq{Size: size}); err != nil {
		t.Fatal(err)
	}
	if got := p.dst.mustRead(p.id, 0, size+10); !bytes.Equal(got, p.data) {
		t.Fatalf("published component: %s", diff(got, p.data))
	}
	if _, err := os.Stat(p.dst.s.ComponentPath(p.id) + stageSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("staged copy left after publish: %v", err)
	}
	if _, err := p.call(rpc.DStagePublish, rpc.RebuildReq{Size: size}); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("second publish: %v; want ENOENT", err)
	}
}

// TestRebuildStoredSums: the target stores the CRCs of what it rebuilt
// from the sums it verified on receive, without summing the bytes again;
// whatever its block size (smaller than, equal to or larger than the wire's
// checksum piece), windows that end inside a block and a component that
// ends inside one, the published component reads back through its stored
// CRCs byte for byte.
func TestRebuildStoredSums(t *testing.T) {
	for _, bs := range []int{4 << 10, rpc.SumBlock, 256 << 10} {
		p := newPeerPair(t, func(c *Config, _ *Deps) { c.BlockSize = bs })
		size := uint64(len(p.data))
		if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{}); err != nil {
			t.Fatal(err)
		}
		for _, cut := range [][2]uint64{{0, 100<<10 + 7}, {100<<10 + 7, 64 << 10}, {164<<10 + 7, size - (164<<10 + 7)}} {
			if _, err := p.call(rpc.DRebuild, p.window(cut[0], cut[1])); err != nil {
				t.Fatalf("block size %d: window %v: %v", bs, cut, err)
			}
		}
		if _, err := p.call(rpc.DStagePublish, rpc.RebuildReq{Size: size}); err != nil {
			t.Fatal(err)
		}
		if got := p.dst.mustRead(p.id, 0, size+10); !bytes.Equal(got, p.data) {
			t.Fatalf("block size %d: published component: %s", bs, diff(got, p.data))
		}
		for off := uint64(0); off < size; off += 5000 {
			n := min(uint64(7000), size-off)
			if got := p.dst.mustRead(p.id, off, n); !bytes.Equal(got, p.data[off:off+n]) {
				t.Fatalf("block size %d: read at %d: %s", bs, off, diff(got, p.data[off:off+n]))
			}
		}
	}
}

// TestRebuildFromPeerRefuses: a rebuild call without the MDS's admin
// capability for that one component on that one server, of a background
// class, is refused; a window too large or with no source that serves it
// fails with a clear error; a corrupt source block is never copied.
func TestRebuildFromPeerRefuses(t *testing.T) {
	p := newPeerPair(t)
	if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{}); err != nil {
		t.Fatal(err)
	}
	wild := p.tok(capability.OpAdmin, 1, "", rpc.ClassRebuild)
	wild.Comp = 0
	wild.Sign(p.src.secret)
	for name, tok := range map[string]capability.Token{
		"another server":    p.tok(capability.OpAdmin, 1, "ds1", rpc.ClassRebuild),
		"another column":    p.tok(capability.OpAdmin, 0, "ds2", rpc.ClassRebuild),
		"not admin":         p.tok(capability.OpRead|capability.OpWrite, 1, "ds2", rpc.ClassRebuild),
		"foreground class":  p.tok(capability.OpAdmin, 1, "ds2", rpc.ClassForeground),
		"no server, column": wild,
	} {
		req := p.window(0, 4096)
		req.Cap = tok
		if _, err := p.call(rpc.DRebuild, req); !errors.Is(err, syscall.EACCES) {
			t.Errorf("%s: %v; want EACCES", name, err)
		}
	}
	if _, err := p.call(rpc.DRebuild, p.window(0, rpc.MaxData+1)); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("window over MaxData: %v; want EINVAL", err)
	}
	bad := p.window(0, 4096)
	bad.Scheme = "rs:0+1"
	if _, err := p.call(rpc.DRebuild, bad); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bad scheme: %v; want EINVAL", err)
	}
	// Flip a byte of the source's block 2 on disk.
	path := p.src.s.ComponentPath(rpc.ComponentID{Ino: 40, Gen: 1, Col: 0})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{p.data[2*4096+5] ^ 1}
	if _, err := f.WriteAt(b, 2*4096+5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := p.call(rpc.DRebuild, p.window(0, 64<<10)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("copy of a corrupt source block: %v; want EIO", err)
	}
	if _, err := p.call(rpc.DStagePublish, rpc.RebuildReq{Size: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	if got := p.dst.mustRead(p.id, 0, 64<<10); !bytes.Equal(got, make([]byte, 64<<10)) {
		t.Fatal("bytes of a window that failed on a corrupt source were stored")
	}
}

// TestRebuildDirectSource: a source whose blocks are rpc.SumBlock sends
// whole blocks from its file unverified (a direct read); the target
// verifies them, so an intact window is copied byte for byte, and a
// corrupt source block is still never copied: the target reads it again
// verified by the source, which answers EIO.
func TestRebuildDirectSource(t *testing.T) {
	p := newPeerPairWith(t, []func(*Config, *Deps){func(c *Config, _ *Deps) { c.BlockSize = rpc.SumBlock }})
	if _, err := p.call(rpc.DStageBegin, rpc.RebuildReq{}); err != nil {
		t.Fatal(err)
	}
	const win = 2 * rpc.SumBlock
	if _, err := p.call(rpc.DRebuild, p.window(0, win)); err != nil {
		t.Fatalf("copy of an intact window: %v", err)
	}
	path := p.src.s.ComponentPath(rpc.ComponentID{Ino: 40, Gen: 1, Col: 0})
	flipBit(t, path, win+rpc.SumBlock+5) // a whole block of the next window
	if _, err := p.call(rpc.DRebuild, p.window(win, win)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("copy of a corrupt source block: %v; want EIO", err)
	}
	if _, err := p.call(rpc.DStagePublish, rpc.RebuildReq{Size: 2 * win}); err != nil {
		t.Fatal(err)
	}
	if got := p.dst.mustRead(p.id, 0, 2*win); !bytes.Equal(got[:win], p.data[:win]) || !bytes.Equal(got[win:], make([]byte, win)) {
		t.Fatal("the published copy is not the intact window followed by zeros: a corrupt block's window was stored")
	}
}
