package rpc

import (
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// vecBody is a body made of pieces sent back to back: a frame header,
// then the data of a call where it already is (the caller's buffers, a
// data server's read buffer). fasthttp writes it with WriteTo, each large
// piece straight from its memory to the connection, instead of copying
// everything into one body buffer first. It is the body stream of a large
// data call's request (Client.CallVec) and of a large read's reply
// (Server.reply).
//
// done, if set, runs once when fasthttp closes the stream (the reply is
// written, or given up): the server hands the read buffer back there.
type vecBody struct {
	pieces [][]byte
	i      int // the piece Read is in
	off    int // bytes of pieces[i] already read
	onClose
	frame []byte // scratch for the frame header, reused with the body
}

var (
	_ fasthttp.BodyWriterTo = (*vecBody)(nil)
	_ io.Closer             = (*vecBody)(nil)
)

var vecBodies = sync.Pool{New: func() any { return new(vecBody) }}

// getVecBody returns an empty vecBody from the pool.
func getVecBody() *vecBody { return vecBodies.Get().(*vecBody) }

// put forgets the pieces (they are not the pool's) and pools v.
func (v *vecBody) put() {
	clear(v.pieces)
	v.pieces, v.i, v.off, v.done = v.pieces[:0], 0, 0, nil
	if cap(v.frame) > maxPooledFrame {
		v.frame = nil
	}
	vecBodies.Put(v)
}

// maxPooledFrame is the largest frame scratch a pooled vecBody keeps.
const maxPooledFrame = 64 << 10

// size returns the bytes of all pieces.
func (v *vecBody) size() int {
	n := 0
	for _, p := range v.pieces {
		n += len(p)
	}
	return n
}

// rewind starts the body again from its first byte (a retried call).
func (v *vecBody) rewind() { v.i, v.off = 0, 0 }

// Read copies the next bytes of the pieces into p.
func (v *vecBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && v.i < len(v.pieces) {
		k := copy(p[n:], v.pieces[v.i][v.off:])
		n += k
		v.off += k
		if v.off == len(v.pieces[v.i]) {
			v.i, v.off = v.i+1, 0
		}
	}
	if n == 0 && v.i >= len(v.pieces) {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left of the pieces to w, each with one Write.
func (v *vecBody) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for v.i < len(v.pieces) {
		k, err := w.Write(v.pieces[v.i][v.off:])
		n += int64(k)
		v.off += k
		if err != nil {
			return n, err
		}
		v.i, v.off = v.i+1, 0
	}
	return n, nil
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (v *vecBody) SupportsBodyWriteTo() bool { return true }

// onClose is a body stream's Close: it runs done, once. fasthttp closes
// a stream when it has written it, or given it up.
type onClose struct{ done func() }

// Close runs done, once.
func (c *onClose) Close() error {
	if c.done != nil {
		done := c.done
		c.done = nil
		done()
	}
	return nil
}
