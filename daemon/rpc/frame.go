package rpc

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"syscall"
)

// appendFrame appends [Version][uvarint len(hdr)][hdr] for msg to b.
func appendFrame(b []byte, msg any) []byte {
	b = append(b, Version, 0, 0, 0, 0, 0) // version, then room for the length
	start := len(b)
	b = Marshal(b, msg)
	n := len(b) - start
	var lb [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(lb[:], uint64(n))
	// Close the gap between the reserved 5 bytes and the actual length size.
	copy(b[start-5:], lb[:ln])
	if ln < 5 {
		copy(b[start-5+ln:], b[start:])
		b = b[:len(b)-(5-ln)]
	}
	return b
}

// splitFrame decodes the header of a frame into msg and returns the data
// that follows it.
func splitFrame(b []byte, msg any) ([]byte, error) {
	hdr, rest, err := frameHeader(b)
	if err != nil {
		return nil, err
	}
	if err := Unmarshal(hdr, msg); err != nil {
		return nil, err
	}
	return rest, nil
}

// frameHeader splits a frame into its encoded message and the data that
// follows it.
func frameHeader(b []byte) (hdr, rest []byte, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty frame", ErrDecode)
	}
	if b[0] != Version {
		return nil, nil, fmt.Errorf("%w: frame version %d, this binary speaks %d", ErrDecode, b[0], Version)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n > uint64(len(b)-1-k) {
		return nil, nil, fmt.Errorf("%w: bad frame header length", ErrDecode)
	}
	return b[1+k : 1+k+int(n)], b[1+k+int(n):], nil
}

// readFrameStart reads a frame's version byte and header length from r.
func readFrameStart(r io.Reader) (uint64, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if b[0] != Version {
		return 0, fmt.Errorf("%w: frame version %d, this binary speaks %d", ErrDecode, b[0], Version)
	}
	hl, err := binary.ReadUvarint(byteReader{r})
	if err != nil {
		return 0, fmt.Errorf("%w: bad frame header length", ErrDecode)
	}
	return hl, nil
}

// statusOf maps an errno to the HTTP status of a failed call.
func statusOf(errno uint32) int {
	switch syscall.Errno(errno) {
	case syscall.ENOENT:
		return http.StatusNotFound
	case syscall.EACCES, syscall.EPERM:
		return http.StatusForbidden
	case syscall.EEXIST, syscall.ENOTEMPTY, syscall.EBUSY:
		return http.StatusConflict
	case syscall.EINVAL, syscall.ENOTDIR, syscall.EISDIR, syscall.ENAMETOOLONG, syscall.ERANGE:
		return http.StatusBadRequest
	case syscall.E2BIG:
		return http.StatusRequestEntityTooLarge
	case syscall.ETIMEDOUT:
		return http.StatusRequestTimeout
	case syscall.ENOSPC:
		return http.StatusInsufficientStorage
	case syscall.EAGAIN, syscall.EHOSTUNREACH:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Frame returns the request or reply frame of msg: version, length, the
// encoded message (data, if any, follows it).
func Frame(msg any) []byte { return appendFrame(nil, msg) }
