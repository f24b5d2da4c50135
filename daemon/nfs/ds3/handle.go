package ds3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// Handle is what a data server file handle names: one component of one
// generation of a file, and the geometry that maps file offsets to it.
type Handle struct {
	Ino   uint64
	Gen   uint64
	Comp  uint32 // component index (for mirror:N, copy r of column c is r*Width+c)
	Col   uint32 // data column
	Width uint32 // data columns
	Unit  uint64 // stripe unit in bytes
}

const (
	handleVersion = 2
	handleLen     = 48
)

// ErrBadHandle is returned for a handle this cluster did not make.
var ErrBadHandle = errors.New("ds3: bad file handle")

func handleMAC(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("strata-ds3-fh"))
	m.Write(b)
	return m.Sum(nil)[:8]
}

// Encode returns the handle's bytes under key (the cluster secret).
func (h Handle) Encode(key []byte) []byte {
	b := make([]byte, handleLen)
	b[0] = handleVersion
	binary.BigEndian.PutUint64(b[4:], h.Ino)
	binary.BigEndian.PutUint64(b[12:], h.Gen)
	binary.BigEndian.PutUint32(b[20:], h.Comp)
	binary.BigEndian.PutUint32(b[24:], h.Col)
	binary.BigEndian.PutUint32(b[28:], h.Width)
	binary.BigEndian.PutUint64(b[32:], h.Unit)
	copy(b[40:], handleMAC(key, b[:40]))
	return b
}

// DecodeHandle checks and decodes a handle made by Encode.
func DecodeHandle(key, b []byte) (Handle, error) {
	if len(b) != handleLen || b[0] != handleVersion || !hmac.Equal(b[40:], handleMAC(key, b[:40])) {
		return Handle{}, ErrBadHandle
	}
	h := Handle{
		Ino: binary.BigEndian.Uint64(b[4:]), Gen: binary.BigEndian.Uint64(b[12:]),
		Comp: binary.BigEndian.Uint32(b[20:]), Col: binary.BigEndian.Uint32(b[24:]),
		Width: binary.BigEndian.Uint32(b[28:]), Unit: binary.BigEndian.Uint64(b[32:]),
	}
	if h.Width == 0 || h.Unit == 0 || h.Col >= h.Width {
		return Handle{}, ErrBadHandle
	}
	return h, nil
}

// colRange maps the file range [off, off+n) to this handle's column: the
// column offset, and how many of the n bytes lie in the stripe unit at off
// (0 if that unit belongs to another column).
func (h Handle) colRange(off uint64, n uint64) (colOff, inUnit uint64) {
	su := off / h.Unit
	if su%uint64(h.Width) != uint64(h.Col) {
		return 0, 0
	}
	in := off % h.Unit
	return (su/uint64(h.Width))*h.Unit + in, min(n, h.Unit-in)
}
