package mds

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds/posix"
	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/crc32c"
	"github.com/strata-hpc/strata/internal/identity"
	"github.com/strata-hpc/strata/qos"
)

// Inline files (Lustre's Data-on-MDT, rpc/inlinemsg.go). A regular file
// created while Config.InlineMax is set has inode.Inline: its bytes are
// inode.Data, with their CRC32C in DataSum, changed only by raft entries
// (cmdInlineWrite, a setattr of its size), so they are as durable and as
// replicated as the namespace, and carried by snapshots. Its layout is
// placed as any file's, but its components are not written while it is
// inline: rebuilds, drains and rebalancing leave it alone (inode.onDS).
//
// A file leaves the MDS once, for good (spillInline): when a write or a
// size passes the threshold, or when a caller that does not read inline
// data (an older client, the NFS front end) asks for its layout. The
// leader writes the bytes to the layout's components through the client
// library's drivers, makes them durable, and only then records
// cmdInlineSpill, which holds only if the inline data did not change
// meanwhile: until that entry is applied the inline bytes are the file's.

// The inline commands: they change what clients read, an old binary must
// not skip them.
const (
	cmdInlineWrite cmdType = 37 // inlineWriteCmd
	cmdInlineSpill cmdType = 38 // inlineSpillCmd
)

// DefaultInlineMax is DefaultConfig's inline threshold.
const DefaultInlineMax = 64 << 10

// DefaultInlineBudget is DefaultConfig's bound on all inline bytes.
const DefaultInlineBudget = 1 << 30

// errNotInline is the FSM's answer to an inline change of a file whose
// bytes are on the data servers (a spill came first).
var errNotInline = errors.New("mds: file is not inline")

// inlineWriteCmd writes Data at Off into inline file Ino.
type inlineWriteCmd struct {
	Ino      uint64
	Off      uint64
	Data     []byte
	Mtime    int64 // 0: Now
	Now      int64
	KillPriv bool // set the permission bits to Mode (file_remove_privs)
	Mode     uint32
}

// inlineSpillCmd records that the components of generation Gen of file Ino
// hold its inline bytes (version Ver, Size bytes), durably: the file is
// no longer inline. It fails if the inline data changed since.
type inlineSpillCmd struct {
	Ino  uint64
	Gen  uint64
	Ver  uint64
	Size uint64
}

func (c *inlineWriteCmd) validate() error {
	if c.Off > rpc.MaxInline || uint64(len(c.Data)) > rpc.MaxInline-c.Off {
		return errf(syscall.EFBIG, "inline write of %d bytes at %d: past the largest inline file (%d bytes)", len(c.Data), c.Off, rpc.MaxInline)
	}
	return nil
}

// onDS reports whether n is a regular file whose bytes are on the data
// servers: one with components to rebuild, drain or move.
func (n *inode) onDS() bool { return n.isFile() && !n.Inline }

// setInline replaces n's inline bytes (never modified in place) and their
// checksum.
func (n *inode) setInline(d []byte) {
	n.Data, n.DataSum, n.Size = d, crc32c.Checksum(d), uint64(len(d))
	n.DataVer++
}

// inlineBytes returns n's inline bytes after checking them against their
// CRC32C: a mismatch is EIO, never data.
func (n *inode) inlineBytes() ([]byte, error) {
	if s := crc32c.Checksum(n.Data); s != n.DataSum || uint64(len(n.Data)) != n.Size {
		return nil, errf(syscall.EIO, "inode %d: inline data fails its checksum (crc32c %08x, recorded %08x, %d bytes of %d)", n.Ino, s, n.DataSum, len(n.Data), n.Size)
	}
	return n.Data, nil
}

func (st *state) applyInlineWrite(c *inlineWriteCmd) result {
	n, err := st.node(c.Ino)
	switch {
	case err != nil:
		return fail(err)
	case !n.isFile():
		return fail(errf(syscall.EINVAL, "inode %d is not a regular file", c.Ino))
	case !n.Inline:
		return fail(errNotInline)
	}
	end := c.Off + uint64(len(c.Data))
	d := make([]byte, max(uint64(len(n.Data)), end))
	copy(d, n.Data)
	copy(d[c.Off:], c.Data)
	w := st.w(c.Ino)
	w.setInline(d)
	if c.KillPriv {
		w.Mode = w.Mode&^0o7777 | c.Mode&0o7777
	}
	w.Mtime = c.Mtime
	if c.Mtime == 0 {
		w.Mtime = c.Now
	}
	w.Ctime = c.Now
	return result{attr: w.attr()}
}

func (st *state) applyInlineSpill(c *inlineSpillCmd) result {
	n, err := st.node(c.Ino)
	switch {
	case err != nil:
		return fail(err)
	case !n.Inline:
		return result{attr: n.attr()} // spilled already
	case n.Layout.Generation != c.Gen || n.DataVer != c.Ver || n.Size != c.Size:
		return fail(errf(syscall.ESTALE, "inode %d: inline data changed while it was written to the data servers", c.Ino))
	}
	w := st.w(c.Ino)
	w.Inline, w.Data, w.DataSum = false, nil, 0
	return result{attr: w.attr()}
}

// resizeInline cuts or zero-extends the inline bytes of w, whose Size was
// just set.
func (w *inode) resizeInline() {
	d := make([]byte, w.Size)
	copy(d, w.Data)
	w.setInline(d)
}

// inlineQuota is quotaCheck for an inline write: the bytes it adds.
func (st *state) inlineQuota(c *inlineWriteCmd) error {
	n := st.inodes[c.Ino]
	end := c.Off + uint64(len(c.Data))
	if n == nil || !n.Inline || end <= n.Size {
		return nil
	}
	return st.quotaRoom(n.Uid, n.Project, end-n.Size, 0)
}

// inlineMax is the size a new file may reach inline; 0: files are not
// made inline.
func (s *Server) inlineMax() uint64 { return uint64(max(s.cfg.InlineMax, 0)) }

// inlineRoom reports whether the inline files may hold more bytes more
// (Config.InlineBudget).
func (s *Server) inlineRoom(more uint64) bool {
	if s.cfg.InlineBudget <= 0 {
		return true
	}
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	return s.fsm.st.inline+more <= uint64(s.cfg.InlineBudget)
}

// isInline reports whether file ino's bytes are in the MDS. A write grant
// of an inline file is not counted as an open (LayoutGetResp.Uncounted):
// the writers are counted for rebuilds, which leave inline files alone,
// so its writer returns nothing at close (one MDS call less per small
// file). A writer whose file left the MDS asks again with Count before
// it writes to the data servers, so a rebuild waits for it as for any.
func (s *Server) isInline(ino uint64) bool {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	n, err := s.fsm.st.node(ino)
	return err == nil && n.Inline
}

// attachInline adds the inline bytes of file ino to resp, with the
// attributes they go with. A file that is not inline (any more) is left
// as it is.
func (s *Server) attachInline(resp *rpc.LayoutGetResp, ino uint64) error {
	s.fsm.mu.RLock()
	defer s.fsm.mu.RUnlock()
	n, err := s.fsm.st.node(ino)
	if err != nil || !n.Inline {
		return err
	}
	d, err := n.inlineBytes()
	if err != nil {
		return err
	}
	resp.Attr = n.attr()
	resp.Inline = &rpc.InlineData{Data: d, Sum: n.DataSum, Max: max(s.inlineMax(), n.Size)}
	return nil
}

func (s *Server) inlineWrite(ctx context.Context, r *rpc.InlineWriteReq) (*rpc.InlineWriteResp, error) {
	if err := s.checkInlineCap(ctx, r); err != nil {
		return nil, err
	}
	c := s.caller(ctx)
	end := r.Off + uint64(len(r.Data))
	if end > s.inlineMax() || end > rpc.MaxInline || !s.inlineRoom(uint64(len(r.Data))) {
		// Past the threshold (or the budget): the file moves to the data
		// servers, where the caller writes.
		if err := s.spillInline(ctx, r.Ino, 0); err != nil {
			return nil, err
		}
		return &rpc.InlineWriteResp{Spilled: true}, nil
	}
	s.fsm.mu.RLock()
	n, err := s.fsm.st.node(r.Ino)
	var inline bool
	var mode, kept uint32
	if err == nil {
		inline, mode, kept = n.Inline, n.Mode&0o7777, posix.KillPriv(&c, perm(n))
	}
	s.fsm.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if !inline {
		return &rpc.InlineWriteResp{Spilled: true}, nil
	}
	cmd := &inlineWriteCmd{Ino: r.Ino, Off: r.Off, Data: r.Data, Mtime: r.Mtime, Now: s.now(), KillPriv: kept != mode, Mode: kept}
	res, err := s.apply(cmdInlineWrite, cmd)
	if errors.Is(err, errNotInline) {
		return &rpc.InlineWriteResp{Spilled: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &rpc.InlineWriteResp{Attr: res.attr}, nil
}

// checkInlineCap checks the write capability an inline write carries, as
// a data server checks a write's: the MDS signed it for this file, it
// allows writing, has not expired, and was issued to this caller.
func (s *Server) checkInlineCap(ctx context.Context, r *rpc.InlineWriteReq) error {
	t := r.Cap
	err := t.Verify(s.cfg.Secret, s.clock(), r.Ino, t.Gen, capability.OpWrite)
	if err == nil && t.Client != "" {
		if id, ok := identity.FromContext(ctx); !ok || id.Principal != t.Client {
			err = capability.ErrHolder
		}
	}
	if err != nil {
		return errf(syscall.EACCES, "inline write to inode %d: capability: %v", r.Ino, err)
	}
	return nil
}

func (s *Server) inlineSpill(ctx context.Context, r *rpc.InoReq) (*rpc.AttrResp, error) {
	c := s.caller(ctx)
	if err := s.check(func(st *state) error { return st.mayOpen(&c, r.Ino, false, true) }); err != nil {
		return nil, err
	}
	if err := s.spillInline(ctx, r.Ino, 0); err != nil {
		return nil, err
	}
	a, err := s.getattr(ctx, r)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// spillAttempts bounds how often a spill starts again because the inline
// data changed while it was being written out.
const spillAttempts = 8

// spillInline moves inline file ino to its layout's components on the
// data servers, each cut or extended to its share of a file of
// max(size, compSize) bytes; a file that is not inline is left alone.
// Spills are one at a time: they are rare (a file passing the threshold,
// an older reader).
func (s *Server) spillInline(ctx context.Context, ino, compSize uint64) error {
	s.fsm.mu.RLock()
	n := s.fsm.st.inodes[ino]
	inline := n != nil && n.Inline
	s.fsm.mu.RUnlock()
	if !inline {
		return nil // the common case, and every file while InlineMax is 0
	}
	s.spillMu.Lock()
	defer s.spillMu.Unlock()
	for range spillAttempts {
		s.fsm.mu.RLock()
		n, err := s.fsm.st.node(ino)
		if err != nil || !n.Inline {
			s.fsm.mu.RUnlock()
			return err
		}
		data, err := n.inlineBytes()
		gen, ver, lay := n.Layout.Generation, n.DataVer, n.Layout
		s.fsm.mu.RUnlock()
		if err != nil {
			return err
		}
		if err := s.writeOut(ctx, ino, data, max(compSize, uint64(len(data)))); err != nil {
			// The file stays inline: what was written of its
			// components goes (no tombstone: the generation is live
			// and a later spill writes it again).
			s.collectNow(ctx, orphan{Ino: ino, Layout: lay}, false)
			return fmt.Errorf("mds: move inline file %d to the data servers: %w", ino, err)
		}
		_, err = s.apply(cmdInlineSpill, &inlineSpillCmd{Ino: ino, Gen: gen, Ver: ver, Size: uint64(len(data))})
		if errors.Is(err, syscall.ENOENT) {
			// Unlinked while its bytes were written out: it left no
			// orphan (dropLink), so what was written goes now.
			s.collectNow(ctx, orphan{Ino: ino, Layout: lay}, true)
		}
		if !errors.Is(err, syscall.ESTALE) {
			return err
		}
	}
	return errf(syscall.EAGAIN, "inode %d: inline data kept changing while it was moved to the data servers", ino)
}

// writeOut writes data as the first bytes of file ino's components, cut
// or extended to size, and makes them durable. The capability names no
// client: the data servers take it from the MDS's own calls.
func (s *Server) writeOut(ctx context.Context, ino uint64, data []byte, size uint64) error {
	cl, err := s.spillClient()
	if err != nil {
		return err
	}
	// Granted without the caller's identity: the capability names no
	// client, as the MDS's own calls to data servers carry none.
	resp, err := s.layoutFor(context.Background(), ino, true, false, qos.Tag{Class: qos.ClassRebuild})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return cl.WriteWhole(ctx, resp, data, int64(size))
}

// spillClient returns the client whose drivers write spilled files, made
// on first use and closed by Close.
func (s *Server) spillClient() (*client.Client, error) {
	s.spillCMu.Lock()
	defer s.spillCMu.Unlock()
	if s.spillC != nil {
		return s.spillC, nil
	}
	c, err := client.New(client.Config{MDS: s.rpcAddr(), TLS: s.tls.client})
	if err != nil {
		return nil, err
	}
	s.spillC = c
	return c, nil
}
