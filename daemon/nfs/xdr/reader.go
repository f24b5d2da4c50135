package xdr

import (
	"encoding/binary"
	"fmt"
)

// Reader decodes XDR items from a byte slice. The first error sticks: later
// calls return zero values and Err reports it. Slices returned by Opaque
// and Fixed alias the Reader's buffer.
type Reader struct {
	buf []byte
	off int
	err error
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Err returns the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records err (the first one wins), so a caller's own check of a
// decoded value stops the decoding as a malformed item does.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Len returns the number of bytes not yet read.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Offset returns the number of bytes read.
func (r *Reader) Offset() int { return r.off }

// Rest returns the unread bytes and consumes them.
func (r *Reader) Rest() []byte {
	b := r.buf[r.off:]
	r.off = len(r.buf)
	return b
}

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf)-r.off {
		r.err = ErrShort
		return nil
	}
	b := r.buf[r.off : r.off+n]
	r.off += n
	return b
}

// Uint32 decodes an unsigned int.
func (r *Reader) Uint32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Int32 decodes an int.
func (r *Reader) Int32() int32 { return int32(r.Uint32()) }

// Uint64 decodes an unsigned hyper.
func (r *Reader) Uint64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Int64 decodes a hyper.
func (r *Reader) Int64() int64 { return int64(r.Uint64()) }

// Bool decodes a bool; a value other than 0 or 1 is an error.
func (r *Reader) Bool() bool {
	v := r.Uint32()
	if v > 1 {
		r.Fail(ErrBadBool)
		return false
	}
	return v == 1
}

// Fixed decodes fixed-length opaque data of n bytes (and its padding).
func (r *Reader) Fixed(n int) []byte {
	b := r.take(n)
	r.take(pad(n))
	if r.err != nil {
		return nil
	}
	return b
}

// Opaque decodes variable-length opaque data of at most max bytes.
func (r *Reader) Opaque(max int) []byte {
	n := r.Uint32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		r.Fail(fmt.Errorf("%w: %d bytes, at most %d", ErrTooLong, n, max))
		return nil
	}
	return r.Fixed(int(n))
}

// String decodes a string of at most max bytes.
func (r *Reader) String(max int) string { return string(r.Opaque(max)) }

// Count decodes the element count of a variable-length array of at most
// max elements, each at least minSize bytes long on the wire, and checks
// that the message can hold them, so a caller may allocate the count.
func (r *Reader) Count(max, minSize int) int {
	n := r.Uint32()
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(max) {
		r.Fail(fmt.Errorf("%w: %d elements, at most %d", ErrTooLong, n, max))
		return 0
	}
	if minSize > 0 && uint64(n)*uint64(minSize) > uint64(r.Len()) {
		r.Fail(ErrShort)
		return 0
	}
	return int(n)
}

// Bitmap decodes a bitmap4 (an array of uint32 words) of at most max words.
func (r *Reader) Bitmap(max int) []uint32 {
	n := r.Count(max, 4)
	if r.err != nil {
		return nil
	}
	w := make([]uint32, n)
	for i := range w {
		w[i] = r.Uint32()
	}
	return w
}

func pad(n int) int { return (4 - n%4) % 4 }
