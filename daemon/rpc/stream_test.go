package rpc

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestLargeBodies: request and reply data of streamMin and more go through
// the pooled request buffers and the streamed reply reader: a reply
// shorter than the caller's buffers fills what it has, a longer one fills
// them and the rest is drained (the connection serves the next call), and
// an error reply of a streamed call is still the remote error. The same
// on a server that does not stream request bodies.
func TestLargeBodies(t *testing.T) {
	t.Run("streamed", func(t *testing.T) { testLargeBodies(t, (*Server).StreamBodies) })
	t.Run("buffered", func(t *testing.T) { testLargeBodies(t) })
}

func testLargeBodies(t *testing.T, opts ...func(*Server)) {
	mux := NewMux()
	HandleData(mux, "echo", func(_ context.Context, r *DSReq, in []byte, out *Data) (*DSResp, error) {
		if r.Off == 1 {
			return nil, Errorf(syscall.EIO, "bad block")
		}
		n := int(r.Len)
		p := out.Buffer(n)
		for i := range p {
			p[i] = in[i%len(in)]
		}
		out.Commit(n)
		return &DSResp{Size: uint64(len(in))}, nil
	})
	addr := startServerWith(t, mux, opts...)
	c := NewClient(ClientConfig{MaxConnsPerHost: 1}) // one connection: a call left undrained would break the next
	defer c.Close()
	ctx := context.Background()
	in := make([]byte, 3<<20+17)
	for i := range in {
		in[i] = byte(i*7 + i>>9)
	}
	for _, tc := range []struct {
		name  string
		reply int   // bytes the server sends
		out   []int // the caller's buffers
		want  int
	}{
		{"exact, two pieces", len(in), []int{1 << 20, len(in) - 1<<20}, len(in)},
		{"short reply", 100 << 10, []int{1 << 20, 1 << 20}, 100 << 10},
		{"long reply drained", 4 << 20, []int{streamMin}, streamMin},
		{"small call", 10, []int{10}, 10},
	} {
		var out [][]byte
		for _, n := range tc.out {
			out = append(out, make([]byte, n))
		}
		var resp DSResp
		n, err := c.CallVec(ctx, addr, "echo", &DSReq{Len: uint64(tc.reply)}, [][]byte{in[:1<<20], in[1<<20:]}, &resp, out)
		if err != nil || n != tc.want || resp.Size != uint64(len(in)) {
			t.Fatalf("%s: n %d resp %+v err %v, want n %d size %d", tc.name, n, resp, err, tc.want, len(in))
		}
		got := bytes.Join(out, nil)[:n]
		for i := range got {
			if got[i] != in[i%len(in)] {
				t.Fatalf("%s: byte %d = %d, want %d", tc.name, i, got[i], in[i%len(in)])
			}
		}
	}
	_, err := c.CallData(ctx, addr, "echo", &DSReq{Off: 1}, in, &DSResp{}, make([]byte, 1<<20))
	if !errors.Is(err, syscall.EIO) || err.Error() != "bad block" {
		t.Fatalf("error reply of a streamed call: %v", err)
	}
}
