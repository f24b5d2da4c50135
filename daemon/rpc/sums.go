package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-hpc/strata/internal/crc32c"
)

// End-to-end checksums. The bytes of a component call travel with the
// CRC32C (Castagnoli) of each piece of them cut at multiples of SumBlock
// of the component offset: a write's in DSReq.Sums, computed by the
// writer and verified by the data server before it stores anything; a
// read's in DSResp.Sums, from the data server's stored block checksums,
// verified by the reader. Neither a corrupt disk, nor a data server that
// returns other bytes than it stored, nor the network can then hand an
// application wrong bytes unnoticed (short of a forged CRC: CRC32C guards
// against faults, not against a malicious server).

// SumBlock is the span of one end-to-end checksum. It is the data
// servers' default block size, whose stored block checksums are then the
// wire's.
const SumBlock = 64 << 10

// SumSize is the size of one checksum in Sums: little-endian CRC32C.
const SumSize = 4

// ErrSum is wrapped when data does not match the checksums sent with it.
var ErrSum = errors.New("rpc: data does not match its checksums")

// SumCount returns how many checksums cover n bytes at component offset
// off.
func SumCount(off uint64, n int) int {
	if n == 0 {
		return 0
	}
	return int((off%SumBlock+uint64(n)-1)/SumBlock + 1) // no overflow near 2^64
}

// AppendSums appends to dst the checksums of the bytes of pieces, back to
// back, which start at component offset off.
func AppendSums(dst []byte, off uint64, pieces ...[]byte) []byte {
	var s uint32
	left := SumBlock - int(off%SumBlock) // bytes until the next cut
	open := false
	for _, p := range pieces {
		for len(p) > 0 {
			k := min(left, len(p))
			s = crc32c.Update(s, p[:k])
			open = true
			p, left = p[k:], left-k
			if left == 0 {
				dst = binary.LittleEndian.AppendUint32(dst, s)
				s, left, open = 0, SumBlock, false
			}
		}
	}
	if open {
		dst = binary.LittleEndian.AppendUint32(dst, s)
	}
	return dst
}

// CheckSums verifies the bytes of pieces, back to back, which start at
// component offset off, against sums.
func CheckSums(off uint64, sums []byte, pieces ...[]byte) error {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	if want := SumCount(off, n); len(sums) != want*SumSize {
		return fmt.Errorf("%w: %d bytes of checksums for %d bytes at %d, want %d", ErrSum, len(sums), n, off, want*SumSize)
	}
	var stack [64 * SumSize]byte
	got := AppendSums(stack[:0], off, pieces...)
	for i := 0; i < len(got); i += SumSize {
		if binary.LittleEndian.Uint32(got[i:]) != binary.LittleEndian.Uint32(sums[i:]) {
			return fmt.Errorf("%w: the piece at %d", ErrSum, segStart(off, i/SumSize))
		}
	}
	return nil
}

// segStart is the component offset where segment i of bytes at off starts.
func segStart(off uint64, i int) uint64 {
	if i == 0 {
		return off
	}
	return (off/SumBlock + uint64(i)) * SumBlock
}
