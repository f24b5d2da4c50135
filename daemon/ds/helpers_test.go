package ds

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// harness is a real data server on 127.0.0.1:0 with data in t.TempDir()
// and a client to call it.
type harness struct {
	t      testing.TB
	cfg    Config
	deps   Deps
	s      *Server
	c      *rpc.Client
	secret []byte
}

func newHarness(t testing.TB, opts ...func(*Config, *Deps)) *harness {
	t.Helper()
	secret, err := capability.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ID = "ds1"
	cfg.Listen = "127.0.0.1:0"
	cfg.Dir = t.TempDir()
	cfg.Secret = secret
	cfg.BlockSize = 4096
	var deps Deps
	for _, o := range opts {
		o(&cfg, &deps)
	}
	h := &harness{t: t, cfg: cfg, deps: deps, secret: secret, c: rpc.NewClient(rpc.ClientConfig{Timeout: 10 * time.Second})}
	h.start()
	t.Cleanup(func() {
		h.c.Close()
		if err := h.s.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

func (h *harness) start() {
	h.t.Helper()
	s, err := New(h.cfg, h.deps)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	<-s.Ready()
	h.s = s
}

// restart closes the server and starts a new one on the same directory.
func (h *harness) restart() {
	h.t.Helper()
	if err := h.s.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.c.Close()
	h.cfg.Listen = "127.0.0.1:0"
	h.start()
}

func (h *harness) token(ino, gen uint64, ops capability.Op) capability.Token {
	tok := capability.Token{Ino: ino, Gen: gen, Ops: ops, Expiry: time.Now().Add(time.Hour).UnixNano()}
	tok.Sign(h.secret)
	return tok
}

func (h *harness) rw(id rpc.ComponentID) capability.Token {
	return h.token(id.Ino, id.Gen, capability.OpRead|capability.OpWrite)
}

// admin is the MDS's token of a data server's own scrub (it names no file).
func (h *harness) admin() capability.Token { return h.token(0, 0, capability.OpAdmin) }

// adminOf is the MDS's admin token for one component's file (no token is
// a wildcard).
func (h *harness) adminOf(id rpc.ComponentID) capability.Token {
	return h.token(id.Ino, id.Gen, capability.OpAdmin)
}

func (h *harness) writeTok(tok capability.Token, id rpc.ComponentID, off uint64, p []byte) (uint64, error) {
	var resp rpc.DSResp
	req := rpc.DSReq{Cap: tok, ID: id, Off: off, Sums: rpc.AppendSums(nil, off, p)}
	_, err := h.c.CallData(context.Background(), h.s.Addr(), rpc.DWrite, &req, p, &resp, nil)
	return resp.Size, err
}

func (h *harness) write(id rpc.ComponentID, off uint64, p []byte) (uint64, error) {
	return h.writeTok(h.rw(id), id, off, p)
}

func (h *harness) mustWrite(id rpc.ComponentID, off uint64, p []byte) {
	h.t.Helper()
	if _, err := h.write(id, off, p); err != nil {
		h.t.Fatalf("write %d bytes at %d: %v", len(p), off, err)
	}
}

// readInto reads into out and returns how many bytes came back, which
// must match the checksums that came with them.
func (h *harness) readInto(tok capability.Token, id rpc.ComponentID, off uint64, out []byte) (int, error) {
	var resp rpc.DSResp
	n, err := h.c.CallData(context.Background(), h.s.Addr(), rpc.DRead, &rpc.DSReq{Cap: tok, ID: id, Off: off, Len: uint64(len(out))}, nil, &resp, out)
	if err == nil {
		err = rpc.CheckSums(off, resp.Sums, out[:n])
	}
	return n, err
}

func (h *harness) read(id rpc.ComponentID, off, n uint64) ([]byte, error) {
	out := make([]byte, n)
	k, err := h.readInto(h.rw(id), id, off, out)
	return out[:k], err
}

func (h *harness) mustRead(id rpc.ComponentID, off, n uint64) []byte {
	h.t.Helper()
	b, err := h.read(id, off, n)
	if err != nil {
		h.t.Fatalf("read %d bytes at %d: %v", n, off, err)
	}
	return b
}

func (h *harness) call(method string, tok capability.Token, id rpc.ComponentID, size uint64) (uint64, error) {
	var resp rpc.DSResp
	err := h.c.Call(context.Background(), h.s.Addr(), method, &rpc.DSReq{Cap: tok, ID: id, Size: size}, &resp)
	return resp.Size, err
}

func (h *harness) stat(id rpc.ComponentID) uint64 {
	h.t.Helper()
	size, err := h.call(rpc.DStat, h.rw(id), id, 0)
	if err != nil {
		h.t.Fatalf("stat: %v", err)
	}
	return size
}

func (h *harness) info() rpc.DSInfoResp {
	h.t.Helper()
	var resp rpc.DSInfoResp
	if err := h.c.Call(context.Background(), h.s.Addr(), rpc.DInfo, &rpc.Empty{}, &resp); err != nil {
		h.t.Fatalf("info: %v", err)
	}
	return resp
}

// model is what a component must hold.
type model []byte

func (m *model) write(off int, p []byte) {
	if len(p) == 0 {
		return // like pwrite(2), an empty write does not extend
	}
	if end := off + len(p); end > len(*m) {
		*m = append(*m, make([]byte, end-len(*m))...)
	}
	copy((*m)[off:], p)
}

func (m *model) truncate(size int) {
	if size < len(*m) {
		*m = (*m)[:size]
		return
	}
	*m = append(*m, make([]byte, size-len(*m))...)
}

func (m model) punch(off, n int) {
	if off < len(m) {
		clear(m[off:min(off+n, len(m))])
	}
}

func (m model) read(off, n int) []byte {
	if off >= len(m) {
		return []byte{}
	}
	return m[off:min(off+n, len(m))]
}

// diff describes the first difference between got and want, or "".
func diff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d (got %d bytes, want %d)", i, len(got), len(want))
		}
	}
	return fmt.Sprintf("got %d bytes, want %d", len(got), len(want))
}

func randBytes(r *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// faultDisk is the OS disk with injectable faults on component files.
type faultDisk struct {
	OSDisk
	mu sync.Mutex
	// fault, when set, is asked before every file operation (op is
	// "read", "write", "sync" or "truncate") and returns the error to
	// inject, or nil.
	fault func(op, name string) error
	// torn makes a failing write store the first half of its bytes.
	torn bool
}

func (d *faultDisk) set(fault func(op, name string) error, torn bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fault, d.torn = fault, torn
}

func (d *faultDisk) check(op, name string) (error, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault == nil {
		return nil, false
	}
	return d.fault(op, name), d.torn
}

func (d *faultDisk) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := d.OSDisk.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, d: d, name: name}, nil
}

type faultFile struct {
	File
	d    *faultDisk
	name string
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err, _ := f.d.check("read", f.name); err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	err, torn := f.d.check("write", f.name)
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	n := 0
	if torn {
		n, _ = f.File.WriteAt(p[:len(p)/2], off)
	}
	return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
}

func (f *faultFile) Sync() error {
	if err, _ := f.d.check("sync", f.name); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err, _ := f.d.check("truncate", f.name); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return f.File.Truncate(size)
}

// eioOn returns a fault that fails op on data files (not checksums) with EIO.
func eioOn(ops ...string) func(op, name string) error {
	return func(op, name string) error {
		if strings.HasSuffix(name, crcSuffix) {
			return nil
		}
		for _, o := range ops {
			if o == op {
				return syscall.EIO
			}
		}
		return nil
	}
}

type atomicCounter struct {
	mu sync.Mutex
	n  uint64
}

func (c *atomicCounter) add() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}
