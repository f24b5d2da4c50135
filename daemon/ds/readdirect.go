package ds

import (
	"encoding/binary"
	"fmt"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/crc32c"
)

// Direct reads (rpc.DSReq.Direct): a reader that verifies every block
// itself lets the data server send the whole blocks a range covers from
// the component's file to the socket (sendfile, rpc/direct.go), with the
// blocks' stored CRCs as their end-to-end checksums. The server neither
// reads nor verifies them: the reader does, and a corrupt block still
// never reaches an application. The reader then reads the range again
// without Direct, and this server reads and verifies it as read does:
// the corrupt block is an EIO of the component, logged here, exactly as
// before. Scrub verifies every block as it always did.
//
// A block the range covers in part, the component's partial last block
// and a hole (stored CRC 0) are read, verified and sent from memory as
// read does: their wire checksums are not their stored CRCs.
//
// The range lock is held while the plan is made, not while the bytes are
// sent: a write to the range meanwhile changes bytes that the reader then
// finds do not match their checksums, and reads again without Direct.
// The entry stays pinned (its files open) until the reply is sent.

// directOut is the reply of a direct read: rpc.Data.
type directOut interface {
	AppendBytes(n int) []byte
	AppendFile(f rpc.FileRange, off int64, n int)
	Defer(fn func())
}

var _ directOut = (*rpc.Data)(nil)

// readDirect is read for a reader that verifies every block (see above).
// It returns the bytes the reply holds and the component's size; the
// wire checksums of those bytes are appended to *wire. The store's block
// size must be rpc.SumBlock. A component whose file cannot be sent from
// (a test's Disk) is read into memory as read does.
func (st *store) readDirect(id rpc.ComponentID, off, length uint64, out directOut, wire *[]byte) (int, uint64, error) {
	return st.readHeld(id, off, length, out.Defer, func(e *entry, end, size uint64) (int, error) {
		file, ok := e.data.(rpc.FileRange)
		if !ok {
			p := out.AppendBytes(int(end - off))
			return len(p), st.readRange(e, off, end, size, p, wire)
		}
		return int(end - off), st.planDirect(e, file, off, end, size, out, wire)
	})
}

// planDirect adds [off, end) of e (which holds size bytes, end <= size)
// to out block by block: runs of whole blocks as ranges of file, the
// others read and verified into memory.
func (st *store) planDirect(e *entry, file rpc.FileRange, off, end, size uint64, out directOut, wire *[]byte) error {
	b0, b1 := off>>st.shift, (end-1)>>st.shift
	sums := st.getSums(int(b1 - b0 + 1))
	defer st.sums.Put(sums)
	if err := readFull(e.crc, *sums, int64(b0*sumSize)); err != nil {
		return fmt.Errorf("read checksums: %w", err)
	}
	for b := b0; b <= b1; b++ {
		start := b << st.shift
		lo, hi := max(off, start), min(end, start+st.bs)
		stored := getSum(*sums, int(b-b0))
		if lo == start && hi == start+st.bs && stored != 0 {
			// Held whole: its stored CRC is the plain CRC32C of its bytes.
			out.AppendFile(file, int64(lo), int(hi-lo))
			*wire = binary.LittleEndian.AppendUint32(*wire, stored)
			continue
		}
		held := min(start+st.bs, size) - start
		buf := st.getBlock()
		blk := (*buf)[:held]
		err := readFull(e.data, blk, int64(start))
		var plain uint32
		if err == nil {
			plain, err = st.check(e.id, b, blk, stored)
		}
		if err == nil {
			p := out.AppendBytes(int(hi - lo))
			copy(p, blk[lo-start:hi-start])
			if lo > start || hi < start+held {
				plain = crc32c.Checksum(p)
			}
			*wire = binary.LittleEndian.AppendUint32(*wire, plain)
		}
		st.blocks.Put(buf)
		if err != nil {
			return err
		}
	}
	return nil
}
