package ds

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// Spliced writes: a large write of whole blocks into a range of a
// component that holds no data (a hole, or past its end: every new
// file's bytes) has its bytes moved by the kernel from the connection into
// the component's file (rpc.Body.Into, splice(2)) instead of being read
// into memory and written with pwrite: one copy of every byte fewer. The
// bytes are then verified against the writer's checksums from the file's
// pages (read back block by block while they are still in the CPU's
// caches), and only if every block matches are its checksums stored and
// the write acknowledged, as a copied write is. A write that fails on the
// way (the connection lost, a block that does not match its checksum, the
// disk) has its range punched back into the hole it was: no byte of it can
// be read, and the range held nothing to lose. A write into data, of
// partial blocks, or on a store whose block size is not rpc.SumBlock is
// read into memory and written as before.

// wantSplice reports whether a write of n bytes at off may be spliced:
// whole blocks of a store whose blocks are the wire's checksum blocks, on
// the operating system's files.
func (s *Server) wantSplice(req *rpc.DSReq, n int) bool {
	st := s.store
	_, osDisk := st.disk.(OSDisk)
	return osDisk && st.bs == rpc.SumBlock && req.Off%st.bs == 0 && uint64(n)%st.bs == 0 && n <= rpc.MaxData
}

// handleSplicedWrite is handleWrite for a write whose data is still on
// the connection (rpc.HandleSplice).
func (s *Server) handleSplicedWrite(ctx context.Context, req *rpc.DSReq, body *rpc.Body) (*rpc.DSResp, error) {
	start, err := s.begin(ctx, req, capability.OpWrite)
	if err != nil {
		return nil, err
	}
	defer s.end(start)
	release, err := s.admit(ctx, &req.Cap, int64(body.Len()))
	if err != nil {
		return nil, err
	}
	defer release()
	size, err := s.store.writeBody(req.ID, req.Off, body, req.Sums)
	if err != nil {
		return nil, wireError(err)
	}
	return &rpc.DSResp{Size: size}, nil
}

// writeBody is write for data still on the connection: spliced where the
// range holds no data, else read into memory and written by writeEntry.
func (st *store) writeBody(id rpc.ComponentID, off uint64, body *rpc.Body, wire []byte) (uint64, error) {
	n := uint64(body.Len())
	if off > maxOffset || n > maxOffset-off {
		return 0, fmt.Errorf("%w: write of %d bytes at %d", ErrRange, n, off)
	}
	if want := rpc.SumCount(off, int(n)) * rpc.SumSize; len(wire) != want {
		return 0, fmt.Errorf("write %s: %w: %d bytes of checksums for %d bytes at %d, want %d",
			componentName(id), rpc.ErrSum, len(wire), n, off, want)
	}
	e, err := st.acquire(id, n > 0)
	if e == nil || err != nil {
		return 0, err
	}
	defer st.release(e)
	if done, size, err := st.spliceEntry(e, off, body, wire); done {
		return size, err
	}
	p, release, err := body.Read()
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", componentName(id), err)
	}
	defer release()
	return st.writeEntry(e, off, p, wire, false)
}

// spliceEntry splices body into e at off if the range holds no data, and
// reports whether it did (done; the write's result follows). off and the
// body's length are whole blocks.
func (st *store) spliceEntry(e *entry, off uint64, body *rpc.Body, wire []byte) (done bool, size uint64, err error) {
	id, n := e.id, uint64(body.Len())
	end := off + n
	b0, b1 := off>>st.shift, (end-1)>>st.shift
	e.ranges.lock(b0, b1, true)
	defer e.ranges.unlock(b0, b1, true)
	f, ok := e.data.(*os.File)
	if !ok || !holeAt(f, int64(off), int64(n)) {
		return false, 0, nil
	}
	need := int64(0)
	if old := e.getSize(); end > old {
		need = int64(min(n, end-old))
	}
	if err := st.charge(need); err != nil {
		return true, 0, fmt.Errorf("write %s: %w", componentName(id), err)
	}
	defer func() {
		st.used.Add(-need)
		st.settle(e)
	}()
	err = body.Into(f, int64(off))
	if err == nil {
		err = st.verifyStored(f, off, int(n), wire)
	}
	if err == nil {
		// Whole blocks: each one's stored CRC is its wire CRC.
		if _, werr := e.crc.WriteAt(wire, int64(b0*sumSize)); werr != nil {
			err = fmt.Errorf("checksums: %w", werr)
		}
	}
	if err != nil {
		// The range was a hole under the range lock: punched back, it
		// reads as before and no unverified byte can be read.
		if perr := punchHole(f, int64(off), int64(n)); perr != nil {
			err = errors.Join(err, fmt.Errorf("punch the failed range back: %w", perr))
		}
		return true, 0, fmt.Errorf("write %s: %w", componentName(id), err)
	}
	st.wb.start(e.data, int64(off), int64(n))
	return true, e.grow(end), nil
}

// holeAt reports whether f holds no data in [off, off+n): a hole, or past
// its end (lseek(2) SEEK_DATA). A file system that cannot say holds data.
func holeAt(f *os.File, off, n int64) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var next int64
	var serr error
	if err := rc.Control(func(fd uintptr) { next, serr = unix.Seek(int(fd), off, unix.SEEK_DATA) }); err != nil {
		return false
	}
	if errors.Is(serr, unix.ENXIO) {
		return true // no data at or after off
	}
	return serr == nil && next >= off+n
}

// verifyStored checks the n bytes of f at off, whole blocks, against
// the wire checksums, reading each block back from the file's pages (just
// written: still in the CPU's caches) into a block buffer.
func (st *store) verifyStored(f *os.File, off uint64, n int, wire []byte) error {
	buf := st.getBlock()
	defer st.blocks.Put(buf)
	for i := 0; i < n; i += len(*buf) {
		at := off + uint64(i)
		if err := readFull(f, *buf, int64(at)); err != nil {
			return fmt.Errorf("read back the block at %d: %w", at, err)
		}
		if crc32c.Checksum(*buf) != getSum(wire, i/len(*buf)) {
			return fmt.Errorf("%w: the piece at %d", rpc.ErrSum, at)
		}
	}
	return nil
}
