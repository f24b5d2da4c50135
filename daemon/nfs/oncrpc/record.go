package oncrpc

import (
	"encoding/binary"
	"fmt"
	"io"
)

const lastFragment = 1 << 31

// ReadRecord reads one record (RFC 5531 section 11) of at most max bytes
// from r into buf's backing array and returns it. A record declared longer
// than max is not read: it fails with ErrRecordTooLarge and the caller
// closes the connection, so a declared 1 GiB record costs nothing.
func ReadRecord(r io.Reader, buf []byte, max int) ([]byte, error) {
	rec := buf[:0]
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		h := binary.BigEndian.Uint32(hdr[:])
		n := int(h &^ lastFragment)
		if len(rec)+n > max {
			return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrRecordTooLarge, len(rec)+n, max)
		}
		start := len(rec)
		if cap(rec) < start+n {
			grown := make([]byte, start, start+n)
			copy(grown, rec)
			rec = grown
		}
		rec = rec[:start+n]
		if _, err := io.ReadFull(r, rec[start:]); err != nil {
			return nil, err
		}
		if h&lastFragment != 0 {
			return rec, nil
		}
	}
}

// RecordHeader returns the record mark of a one-fragment record of n bytes.
func RecordHeader(n int) [4]byte {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(n)|lastFragment)
	return h
}
