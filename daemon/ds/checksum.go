package ds

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"

	"github.com/strata-hpc/strata/internal/crc32c"
)

// castagnoli is the CRC32C table, built once, for small records (the
// tombstone journal's); block and wire sums go through crc32c, which folds
// with AVX-512 where the CPU has it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumSize is the size of one stored block checksum.
const sumSize = 4

// checksummer computes and checks block CRCs for one block size. A block's
// CRC covers the whole block, bytes past the end of the component counted
// as zeros, so growing a component never changes an earlier block's CRC.
// It is immutable and safe for concurrent use.
type checksummer struct {
	bs   int
	zero []byte // bs zero bytes, never written
}

func newChecksummer(bs int) checksummer {
	return checksummer{bs: bs, zero: make([]byte, bs)}
}

// sum returns the CRC of a block holding lead zero bytes, then p, then
// zeros up to the block size. lead+len(p) must not exceed the block size.
func (c checksummer) sum(lead int, p []byte) uint32 {
	s := crc32c.Update(0, c.zero[:lead])
	s = crc32c.Update(s, p)
	return crc32c.Update(s, c.zero[:c.bs-lead-len(p)])
}

// extend returns the CRC of a block that starts with n bytes whose plain
// CRC32C is plain, then zeros up to the block size: only the zeros are
// summed.
func (c checksummer) extend(plain uint32, n int) uint32 {
	return crc32c.Update(plain, c.zero[:c.bs-n])
}

// verify reports whether the block whose bytes up to the end of the
// component are p matches the stored CRC. A stored 0 over zeros is a hole
// (a block never written) and matches too. It also returns the plain
// CRC32C of p, the end-to-end checksum of p (rpc.SumBlock), computed on
// the way.
func (c checksummer) verify(p []byte, stored uint32) (plain uint32, ok bool) {
	plain = crc32c.Update(0, p)
	if crc32c.Update(plain, c.zero[:c.bs-len(p)]) == stored {
		return plain, true
	}
	return plain, stored == 0 && c.isZero(p)
}

func (c checksummer) isZero(p []byte) bool {
	for len(p) > 0 {
		n := min(len(p), len(c.zero))
		if !bytes.Equal(p[:n], c.zero[:n]) {
			return false
		}
		p = p[n:]
	}
	return true
}

// getSum and putSum read and write the i-th little-endian CRC of a
// checksum file image.
func getSum(b []byte, i int) uint32    { return binary.LittleEndian.Uint32(b[i*sumSize:]) }
func putSum(b []byte, i int, s uint32) { binary.LittleEndian.PutUint32(b[i*sumSize:], s) }
