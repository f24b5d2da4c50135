package xdr

import "encoding/binary"

// Writer appends XDR items to a byte slice. It never fails.
type Writer struct {
	buf []byte
}

// NewWriter returns a Writer appending to b[:0]'s backing array.
func NewWriter(b []byte) *Writer { return &Writer{buf: b[:0]} }

// Bytes returns the encoded bytes; they alias the Writer's buffer.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written.
func (w *Writer) Len() int { return len(w.buf) }

// Truncate drops what was written after the first n bytes.
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// Uint32 encodes an unsigned int.
func (w *Writer) Uint32(v uint32) { w.buf = binary.BigEndian.AppendUint32(w.buf, v) }

// Int32 encodes an int.
func (w *Writer) Int32(v int32) { w.Uint32(uint32(v)) }

// Uint64 encodes an unsigned hyper.
func (w *Writer) Uint64(v uint64) { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }

// Int64 encodes a hyper.
func (w *Writer) Int64(v int64) { w.Uint64(uint64(v)) }

// Bool encodes a bool.
func (w *Writer) Bool(v bool) {
	if v {
		w.Uint32(1)
	} else {
		w.Uint32(0)
	}
}

// Fixed encodes fixed-length opaque data and its padding.
func (w *Writer) Fixed(b []byte) {
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, zeros[:pad(len(b))]...)
}

// Opaque encodes variable-length opaque data.
func (w *Writer) Opaque(b []byte) {
	w.Uint32(uint32(len(b)))
	w.Fixed(b)
}

// String encodes a string.
func (w *Writer) String(s string) {
	w.Uint32(uint32(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, zeros[:pad(len(s))]...)
}

// Bitmap encodes a bitmap4, dropping trailing zero words.
func (w *Writer) Bitmap(words []uint32) {
	n := len(words)
	for n > 0 && words[n-1] == 0 {
		n--
	}
	w.Uint32(uint32(n))
	for _, v := range words[:n] {
		w.Uint32(v)
	}
}

// Reserve appends a zero uint32 and returns its offset, for PutUint32At.
func (w *Writer) Reserve() int {
	off := len(w.buf)
	w.Uint32(0)
	return off
}

// PutUint32At overwrites the uint32 at offset off (from Reserve).
func (w *Writer) PutUint32At(off int, v uint32) {
	binary.BigEndian.PutUint32(w.buf[off:], v)
}

var zeros [4]byte
