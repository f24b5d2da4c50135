package rpc

import (
	"errors"
	"io"
	"net"
	"reflect"
	"syscall"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// Direct replies: a data handler whose call came over a plain TCP
// connection may answer with ranges of files instead of bytes in memory
// (Data.AppendFile). The transport sends them from the file to the socket
// with sendfile(2): no copy into the process and none out of it, where a
// reply read into a buffer costs a pread and a write of every byte. A
// data server's read sends whole blocks this way, unverified, with their
// stored checksums beside them for the reader to verify (DSReq.Direct).
//
// A TLS connection never gets a direct reply (its bytes must pass through
// the TLS record layer); Data.Direct tells the handler which it has.

// FileRange is a file a direct reply sends from: *os.File is one. Its
// descriptor must stay open until the reply is sent (Data.Defer).
type FileRange interface {
	syscall.Conn
	io.ReaderAt
}

// segment is one piece of a direct reply: bytes in memory, or n bytes of
// a file at off.
type segment struct {
	mem  []byte
	file FileRange
	off  int64
	n    int64
}

func (s segment) size() int64 {
	if s.file != nil {
		return s.n
	}
	return int64(len(s.mem))
}

// Direct reports whether the reply may carry file ranges (AppendFile):
// the call came over plain TCP.
func (d *Data) Direct() bool { return d.conn != nil }

// AppendBytes appends n bytes of memory to a direct reply and returns
// them for the handler to fill. They come from the transport's pool.
func (d *Data) AppendBytes(n int) []byte {
	p := getBuf(n)
	d.held = append(d.held, p)
	d.segs = append(d.segs, segment{mem: *p})
	return *p
}

// AppendFile appends n bytes of f at off to a direct reply. f must stay
// open until the reply is sent: the handler defers its release (Defer).
func (d *Data) AppendFile(f FileRange, off int64, n int) {
	if k := len(d.segs); k > 0 && d.segs[k-1].file == f && d.segs[k-1].off+d.segs[k-1].n == off {
		d.segs[k-1].n += int64(n)
		return
	}
	d.segs = append(d.segs, segment{file: f, off: off, n: int64(n)})
}

// Defer has fn run once the reply is written to the connection or given
// up, or, if the call fails, when it ends.
func (d *Data) Defer(fn func()) { d.after = append(d.after, fn) }

// directSize returns the bytes of a direct reply's segments.
func (d *Data) directSize() int64 {
	var n int64
	for _, s := range d.segs {
		n += s.size()
	}
	return n
}

// releaseDirect gives back what a direct reply holds: its buffers, and
// what its handler deferred.
func (d *Data) releaseDirect() {
	for _, p := range d.held {
		putBuf(p)
	}
	clear(d.held)
	clear(d.segs)
	d.held, d.segs = d.held[:0], d.segs[:0]
	for i, fn := range d.after {
		fn()
		d.after[i] = nil
	}
	d.after = d.after[:0]
}

// tcpConn returns the plain TCP connection under c, or nil. fasthttp hands
// a handler its connection wrapped (a per-peer counting conn that embeds
// the accepted one as its field Conn); a TLS connection has no such field
// and is never unwrapped.
func tcpConn(c net.Conn) *net.TCPConn {
	for range 4 {
		switch t := c.(type) {
		case nil:
			return nil
		case *net.TCPConn:
			return t
		}
		v := reflect.ValueOf(c)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil
		}
		f := v.Elem().FieldByName("Conn")
		if !f.IsValid() || !f.CanInterface() {
			return nil
		}
		inner, ok := f.Interface().(net.Conn)
		if !ok {
			return nil
		}
		c = inner
	}
	return nil
}

// directBody is the body of a direct reply: the frame, then the segments.
// fasthttp writes it with WriteTo after it has flushed the response
// headers (ImmediateHeaderFlush); WriteTo writes to the connection
// itself, memory with writev and file ranges with sendfile. Read serves
// the same bytes (pread) should fasthttp ever read it instead.
type directBody struct {
	conn *net.TCPConn
	segs []segment // the frame first
	i    int       // the segment Read is in
	off  int64     // bytes of segs[i] already read
	onClose
	bufs  net.Buffers // scratch for writev
	frame []byte
}

var (
	_ fasthttp.BodyWriterTo = (*directBody)(nil)
	_ io.Closer             = (*directBody)(nil)
)

func (b *directBody) size() int {
	var n int64
	for _, s := range b.segs {
		n += s.size()
	}
	return int(n)
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (b *directBody) SupportsBodyWriteTo() bool { return true }

// WriteTo writes the reply to the connection, not to w: fasthttp flushed
// the headers before (ImmediateHeaderFlush), and nothing it buffers
// follows until the body is written. Without a connection (a call served
// in memory) it copies everything to w.
func (b *directBody) WriteTo(w io.Writer) (int64, error) {
	if b.conn == nil {
		return b.copyTo(w)
	}
	var n int64
	flush := func() error {
		if len(b.bufs) == 0 {
			return nil
		}
		bufs := b.bufs
		k, err := bufs.WriteTo(b.conn)
		n += k
		clear(b.bufs)
		b.bufs = b.bufs[:0]
		return err
	}
	for _, s := range b.segs[b.i:] {
		if s.file == nil {
			b.bufs = append(b.bufs, s.mem)
			continue
		}
		if err := flush(); err != nil {
			return n, err
		}
		k, err := sendFile(b.conn, s.file, s.off, s.n)
		n += k
		if err != nil {
			return n, err
		}
	}
	b.i = len(b.segs)
	return n, flush()
}

// copyTo writes the rest of the reply to w through memory.
func (b *directBody) copyTo(w io.Writer) (int64, error) {
	var n int64
	for _, s := range b.segs[b.i:] {
		var k int64
		var err error
		if s.file == nil {
			var m int
			m, err = w.Write(s.mem)
			k = int64(m)
		} else {
			k, err = copyRange(w, s.file, s.off, s.n)
		}
		n += k
		if err != nil {
			return n, err
		}
	}
	b.i = len(b.segs)
	return n, nil
}

// Read copies the next bytes of the reply into p.
func (b *directBody) Read(p []byte) (int, error) {
	for b.i < len(b.segs) {
		s := b.segs[b.i]
		if b.off == s.size() {
			b.i, b.off = b.i+1, 0
			continue
		}
		var k int
		if s.file == nil {
			k = copy(p, s.mem[b.off:])
		} else {
			k = int(min(int64(len(p)), s.n-b.off))
			if got, err := s.file.ReadAt(p[:k], s.off+b.off); err != nil {
				clear(p[got:k]) // fails the reader's check
			}
		}
		b.off += int64(k)
		return k, nil
	}
	return 0, io.EOF
}

// maxSendfile is the most bytes one sendfile(2) call moves.
const maxSendfile = 1 << 30

// sendFile writes n bytes of f at off to conn with sendfile(2), waiting
// for the socket as a Write would (its deadline holds). Where sendfile
// fails or the file ends early, the rest is read and written instead, and
// bytes the file cannot give are sent as zeros: the reply keeps its
// length and the reader's checksums fail them.
func sendFile(conn *net.TCPConn, f FileRange, off, n int64) (int64, error) {
	var sent int64
	fallback := true
	src, err := f.SyscallConn()
	dst, derr := conn.SyscallConn()
	if err == nil && derr == nil {
		var werr error
		cerr := src.Control(func(in uintptr) {
			werr = dst.Write(func(out uintptr) bool {
				for sent < n {
					o := off + sent
					k, err := unix.Sendfile(int(out), int(in), &o, int(min(n-sent, maxSendfile)))
					if k > 0 {
						sent += int64(k)
					}
					switch {
					case errors.Is(err, unix.EAGAIN):
						return false // wait until the socket takes more
					case errors.Is(err, unix.EINTR):
						continue
					case err != nil || k <= 0:
						return true // copied below, or failing there on the socket
					}
				}
				fallback = false
				return true
			})
		})
		if cerr == nil && werr != nil {
			return sent, werr
		}
	}
	if !fallback {
		return sent, nil
	}
	k, err := copyRange(conn, f, off+sent, n-sent)
	return sent + k, err
}

// copyRange writes n bytes of f at off to w through a buffer; what f
// cannot give is sent as zeros.
func copyRange(w io.Writer, f io.ReaderAt, off, n int64) (int64, error) {
	p := getBuf(int(min(n, 1<<20)))
	defer putBuf(p)
	var sent int64
	for sent < n {
		b := (*p)[:min(n-sent, int64(len(*p)))]
		if got, err := f.ReadAt(b, off+sent); err != nil {
			clear(b[got:])
		}
		k, err := w.Write(b)
		sent += int64(k)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}
