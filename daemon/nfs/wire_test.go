package nfs_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/nfs/oncrpc"
	"github.com/strata-hpc/strata/daemon/nfs/xdr"
)

// wireClient speaks raw ONC RPC to the front end, to send what the
// kernel client never would.
type wireClient struct {
	t   testing.TB
	nc  net.Conn
	br  *bufio.Reader
	xid uint32
	sid [16]byte
	seq uint32
}

func dialNFS(t testing.TB, addr string) *wireClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(2 * time.Minute))
	return &wireClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// raw sends one record and returns the reply record. Calls the server
// sends on the connection (callbacks: it may take any connection of a
// session for its backchannel) are left unanswered, as by a client that
// never hears them.
func (c *wireClient) raw(rec []byte) ([]byte, error) {
	h := oncrpc.RecordHeader(len(rec))
	if _, err := c.nc.Write(append(h[:], rec...)); err != nil {
		return nil, err
	}
	for {
		rep, err := oncrpc.ReadRecord(c.br, nil, 4<<20)
		if err != nil || len(rep) < 8 || binary.BigEndian.Uint32(rep[4:8]) != oncrpc.MsgCall {
			return rep, err
		}
	}
}

// call sends a call of prog/vers/proc with AUTH_SYS uid 0 and returns
// the accept state and the results.
func (c *wireClient) call(prog, vers, proc uint32, body []byte) (uint32, *xdr.Reader, error) {
	c.xid++
	w := xdr.NewWriter(nil)
	w.Uint32(c.xid)
	w.Uint32(oncrpc.MsgCall)
	w.Uint32(2)
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proc)
	w.Uint32(oncrpc.AuthSys)
	cred := xdr.NewWriter(nil)
	oncrpc.EncodeSys(cred, &oncrpc.SysCred{Machine: "test"})
	w.Opaque(cred.Bytes())
	w.Uint32(oncrpc.AuthNone)
	w.Uint32(0)
	w.Fixed(body)
	rep, err := c.raw(w.Bytes())
	if err != nil {
		return 0, nil, err
	}
	r := xdr.NewReader(rep)
	if r.Uint32() != c.xid || r.Uint32() != oncrpc.MsgReply {
		return 0, nil, errors.New("reply to another call")
	}
	if r.Uint32() != oncrpc.MsgAccepted {
		return 1000 + r.Uint32(), r, nil
	}
	r.Uint32()
	r.Opaque(400)
	return r.Uint32(), r, r.Err()
}

type op struct {
	num  uint32
	args func(w *xdr.Writer)
}

type opResult struct {
	num, status uint32
}

// compound sends a COMPOUND and returns its status, the first op's
// number and status, and a reader positioned after that status.
func (c *wireClient) compound(minor uint32, ops ...op) (uint32, []opResult, *xdr.Reader) {
	c.t.Helper()
	w := xdr.NewWriter(nil)
	w.String("test")
	w.Uint32(minor)
	w.Uint32(uint32(len(ops)))
	for _, o := range ops {
		w.Uint32(o.num)
		if o.args != nil {
			o.args(w)
		}
	}
	stat, r, err := c.call(100003, 4, 1, w.Bytes())
	if err != nil || stat != oncrpc.Success {
		c.t.Fatalf("COMPOUND: accept state %d, %v", stat, err)
	}
	status := r.Uint32()
	r.String(1024)
	n := r.Uint32()
	var res []opResult
	if n > 0 {
		res = append(res, opResult{num: r.Uint32(), status: r.Uint32()})
	}
	return status, res, r
}

const (
	opSequence      = 53
	opPutrootfh     = 24
	opPutfh         = 22
	opGetfh         = 10
	opLookup        = 15
	opGetattr       = 9
	opExchangeID    = 42
	opCreateSession = 43
)

// session does EXCHANGE_ID and CREATE_SESSION.
func (c *wireClient) session() {
	c.t.Helper()
	c.sessionAs("wire-test-client")
}

// sessionAs is session as the client named owner.
func (c *wireClient) sessionAs(owner string) {
	c.t.Helper()
	st, res, r := c.compound(1, op{opExchangeID, func(w *xdr.Writer) {
		w.Fixed([]byte("verifier"))
		w.String(owner)
		w.Uint32(0)
		w.Uint32(0) // SP4_NONE
		w.Uint32(0) // no impl id
	}})
	if st != 0 {
		c.t.Fatalf("EXCHANGE_ID: %d %v", st, res)
	}
	clientID := r.Uint64()
	seq := r.Uint32()
	st, res, r = c.compound(1, op{opCreateSession, func(w *xdr.Writer) {
		w.Uint64(clientID)
		w.Uint32(seq)
		w.Uint32(0)
		for range 2 {
			for _, v := range []uint32{0, 1 << 20, 1 << 20, 4096, 16, 4} {
				w.Uint32(v)
			}
			w.Uint32(0)
		}
		w.Uint32(0x40000000)
		w.Uint32(1)
		w.Uint32(oncrpc.AuthNone)
	}})
	if st != 0 {
		c.t.Fatalf("CREATE_SESSION: %d %v", st, res)
	}
	copy(c.sid[:], r.Fixed(16))
}

// seqOp is the SEQUENCE that starts each compound of the session.
func (c *wireClient) seqOp() op {
	c.seq++
	seq := c.seq
	return op{opSequence, func(w *xdr.Writer) {
		w.Fixed(c.sid[:])
		w.Uint32(seq)
		w.Uint32(0)
		w.Uint32(0)
		w.Bool(false)
	}}
}

// skipSequence skips a SEQUENCE result body.
func skipSequence(r *xdr.Reader) {
	r.Fixed(16)
	for range 5 {
		r.Uint32()
	}
}

// closedByServer reports whether the server closed the connection.
func (c *wireClient) closedByServer() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.br.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
