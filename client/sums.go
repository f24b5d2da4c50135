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

// replyCheck verifies a read reply's bytes, scattered over pieces from
// component offset off, against the reply's sums block by block as they
// land (rpc.Client.CallRead): each rpc.SumBlock is summed right after its
// last byte arrives, while it is still in the CPU's caches, instead of in
// a second pass over the whole reply once it is out of them.
type replyCheck struct {
	off    uint64
	resp   *rpc.DSResp
	pieces [][]byte
	done   int      // bytes verified
	pi, po int      // where byte done is: piece index and offset in it
	err    error    // the first failure; nothing more is verified
	span   [][]byte // scratch: the pieces of the bytes being verified
}

// landed verifies the whole blocks among the first n bytes.
func (c *replyCheck) landed(n int) {
	end := n - int((c.off+uint64(n))%rpc.SumBlock)
	if end > c.done {
		c.verify(end)
	}
}

// finish verifies the rest of the got bytes the reply held and that the
// reply had a checksum for each of their blocks, no more.
func (c *replyCheck) finish(got int) error {
	if got > c.done {
		c.verify(got)
	}
	if c.err == nil && len(c.resp.Sums) != rpc.SumCount(c.off, got)*rpc.SumSize {
		c.err = &sumError{err: fmt.Errorf("%w: %d bytes of checksums for %d bytes at %d", rpc.ErrSum, len(c.resp.Sums), got, c.off)}
	}
	return c.err
}

// verify checks bytes [c.done, end) against their checksums.
func (c *replyCheck) verify(end int) {
	if c.err != nil {
		return
	}
	at := c.off + uint64(c.done)
	span := c.span[:0]
	for left := end - c.done; left > 0; {
		pc := c.pieces[c.pi][c.po:]
		k := min(left, len(pc))
		span = append(span, pc[:k])
		left -= k
		if c.po += k; c.po == len(c.pieces[c.pi]) {
			c.pi, c.po = c.pi+1, 0
		}
	}
	c.span = span[:0]
	first := int(at/rpc.SumBlock - c.off/rpc.SumBlock) // index of at's block in Sums
	count := rpc.SumCount(at, end-c.done)
	c.done = end
	sums := c.resp.Sums
	if len(sums) < (first+count)*rpc.SumSize {
		c.err = &sumError{err: fmt.Errorf("%w: %d bytes of checksums for more than %d bytes at %d", rpc.ErrSum, len(sums), end, c.off)}
		return
	}
	if err := rpc.CheckSums(at, sums[first*rpc.SumSize:(first+count)*rpc.SumSize], span...); err != nil {
		c.err = &sumError{err: err}
	}
}

func totalLen(pieces [][]byte) int {
	n := 0
	for _, pc := range pieces {
		n += len(pc)
	}
	return n
}
