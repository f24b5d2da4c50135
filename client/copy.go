package client

import (
	"errors"
	"io"
)

// copyBuf is the transfer size of ReadFrom and WriteTo: whole stripe rows,
// at least 16 MiB, at most 64 MiB.
func (f *File) copyBuf() int {
	l := f.Layout()
	row := int(l.Unit) * l.Width
	n := max(16<<20/row, 1) * row
	return min(n, 64<<20)
}

// ReadFrom copies r to the file from its offset until EOF, reading the next
// buffer from r while the previous one is written to the data servers. It
// makes io.Copy(file, src) fast.
func (f *File) ReadFrom(r io.Reader) (int64, error) {
	size := f.copyBuf()
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	type result struct {
		n   int
		err error
	}
	var total int64
	var pending chan result
	for i := 0; ; i++ {
		buf := bufs[i%2]
		n, rerr := io.ReadFull(r, buf)
		if pending != nil {
			res := <-pending
			pending = nil
			total += int64(res.n)
			if res.err != nil {
				return total, res.err
			}
		}
		if n > 0 {
			pending = make(chan result, 1)
			go func(b []byte) {
				n, err := f.Write(b)
				pending <- result{n, err}
			}(buf[:n])
		}
		if rerr != nil {
			if pending != nil {
				res := <-pending
				total += int64(res.n)
				if res.err != nil {
					return total, res.err
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				return total, nil
			}
			return total, rerr
		}
	}
}

// WriteTo copies the file from its offset to w, reading the next buffer
// from the data servers while the previous one is written to w. It makes
// io.Copy(dst, file) fast.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	size := f.copyBuf()
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	type result struct {
		n   int
		err error
	}
	var total int64
	read := func(b []byte) chan result {
		ch := make(chan result, 1)
		go func() {
			n, err := f.Read(b)
			ch <- result{n, err}
		}()
		return ch
	}
	next := read(bufs[0])
	for i := 0; ; i++ {
		res := <-next
		if res.err != nil && !errors.Is(res.err, io.EOF) {
			return total, res.err
		}
		if res.n == 0 {
			return total, nil
		}
		buf := bufs[i%2][:res.n]
		next = read(bufs[(i+1)%2])
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			<-next
			return total, err
		}
	}
}
