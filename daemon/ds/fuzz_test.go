package ds

import (
	"encoding/binary"
	"net/http"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/capability"
)

// FuzzHandlers feeds requests to every data server method behind the
// router (rpc.Server.Dispatch): either raw bytes, or a request with a
// valid capability for the fuzzed component, offsets and lengths, so that
// the handlers themselves are reached. No panic; every reply is a frame,
// a failure a wire error with an errno.
func FuzzHandlers(f *testing.F) {
	h := newHarness(f)
	methods := h.s.rpc.Methods()
	for i := range methods {
		f.Add(uint8(i), true, uint64(2), uint64(1), uint8(0), uint64(0), uint64(8), uint64(0), []byte("12345678"))
		f.Add(uint8(i), false, uint64(0), uint64(0), uint8(0), uint64(0), uint64(0), uint64(0), rpc.Frame(&rpc.DSReq{Off: 1}))
	}
	f.Fuzz(func(t *testing.T, which uint8, signed bool, ino, gen uint64, col uint8, off, n, size uint64, body []byte) {
		method := methods[int(which)%len(methods)]
		ino, gen, off, n, size = ino%64+1, gen%4+1, off%(1<<20), n%(1<<20), size%(1<<20)
		id := rpc.ComponentID{Ino: ino, Gen: gen, Col: uint32(col % 4)}
		if signed {
			req := &rpc.DSReq{Cap: h.token(ino, gen, capability.OpRead|capability.OpWrite|capability.OpAdmin), ID: id, Off: off, Len: n, Size: size}
			body = append(rpc.Frame(req), body...)
		}
		status, reply := h.s.rpc.Dispatch(method, body)
		if status != http.StatusOK {
			var re rpc.Error
			if err := rpc.Unmarshal(frameBody(t, reply), &re); err != nil || re.Errno == 0 {
				t.Fatalf("%s: status %d, reply %q is not a wire error (%v)", method, status, reply, err)
			}
			return
		}
		var resp rpc.DSResp
		_ = rpc.Unmarshal(frameBody(t, reply), &resp) // not every method answers a DSResp
	})
}

// frameBody returns the message of a reply frame, failing the test if it
// is not one.
func frameBody(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[0] != rpc.Version {
		t.Fatalf("reply %q is not a frame", b)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || int(n) > len(b)-1-k {
		t.Fatalf("reply %q: bad frame length", b)
	}
	return b[1+k : 1+k+int(n)]
}
