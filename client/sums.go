package client

import (
	"fmt"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// End-to-end checksums (rpc.AppendSums): every write carries the CRC32C
// of each rpc.SumBlock of its bytes, which the data server verifies before
// it stores them; every read's reply carries them too, from the data
// server's stored block checksums, and the client verifies the bytes
// against them before it hands them on. A reply that fails is an EIO of
// that component (sumError): mirror and rs files read around it, as
// around a block that failed its check on the data server, and tell the
// MDS; a none file's read fails. Each side sums each block once.

// sumError is a reply whose bytes do not match their checksums.
type sumError struct{ err error }

func (e *sumError) Error() string {
	return fmt.Sprintf("reply failed its end-to-end check (%v): %v", e.err, syscall.EIO)
}

func (e *sumError) Unwrap() []error { return []error{e.err, syscall.EIO} }

// checkReply verifies the got bytes a read scattered over pieces, from
// component offset off, against the reply's sums.
func checkReply(off uint64, sums []byte, pieces [][]byte, got int) error {
	filled := pieces
	if got < totalLen(pieces) {
		filled = make([][]byte, 0, len(pieces))
		for _, pc := range pieces {
			if got == 0 {
				break
			}
			k := min(got, len(pc))
			filled = append(filled, pc[:k])
			got -= k
		}
	}
	if err := rpc.CheckSums(off, sums, filled...); err != nil {
		return &sumError{err: err}
	}
	return nil
}

func totalLen(pieces [][]byte) int {
	n := 0
	for _, pc := range pieces {
		n += len(pc)
	}
	return n
}
