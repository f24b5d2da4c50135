package mds

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/internal/identity"
)

// FuzzHandlers feeds arbitrary requests to every MDS method behind the
// router (rpc.Server.Dispatch) of a running single-voter MDS: no panic (a
// panic in Apply would stop the replica), every reply a frame, every
// failure a wire error with an errno, and the server still answers. The
// membership calls are left out: a fuzzed voter would take the quorum.
func FuzzHandlers(f *testing.F) {
	cfg := testConfig(f.TempDir())
	s, err := New(cfg, Deps{})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	select {
	case <-s.Ready():
	case <-time.After(30 * time.Second):
		f.Fatal("mds not ready")
	}
	methods := slices.DeleteFunc(s.srv.Methods(), func(m string) bool { return m == rpc.MAddVoter || m == rpc.MRemoveVoter })
	// As root on a trusted node: the handlers, not the authentication
	// (auth_test.go), are what this fuzzes.
	root, err := identity.NewNodeCredentials(testSecret(), identity.RoleNode, "fuzz", "").Header(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	seeds := []any{
		&rpc.EntryReq{Parent: rpc.RootIno, Name: "a"},
		&rpc.MkdirReq{Parent: rpc.RootIno, Name: "d", Mode: 0o755},
		&rpc.SymlinkReq{Parent: rpc.RootIno, Name: "l", Target: "a"},
		&rpc.XattrReq{Ino: rpc.RootIno, Name: "user.x", Value: []byte("v")},
		&rpc.SetattrReq{Ino: rpc.RootIno, Valid: rpc.SetMode, Mode: 0o700},
		&rpc.RenameReq{OldParent: rpc.RootIno, OldName: "d", NewParent: rpc.RootIno, NewName: "e"},
		&rpc.InoReq{Ino: rpc.RootIno},
	}
	for i := range methods {
		for _, m := range seeds {
			f.Add(uint8(i), rpc.Frame(m))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		method := methods[int(which)%len(methods)]
		status, reply := s.srv.Dispatch(method, body, root)
		if len(reply) < 2 || reply[0] != rpc.Version {
			t.Fatalf("%s: status %d, reply %q is not a frame", method, status, reply)
		}
		if status != http.StatusOK {
			n, k := binary.Uvarint(reply[1:])
			var re rpc.Error
			if k <= 0 || int(n) > len(reply)-1-k || rpc.Unmarshal(reply[1+k:1+k+int(n)], &re) != nil || re.Errno == 0 {
				t.Fatalf("%s: status %d, reply %q is not a wire error", method, status, reply)
			}
		}
		if st, r := s.srv.Dispatch(rpc.MGetattr, rpc.Frame(&rpc.InoReq{Ino: rpc.RootIno}), root); st != http.StatusOK || !bytes.HasPrefix(r, []byte{rpc.Version}) {
			t.Fatalf("after %s: getattr of the root: status %d", method, st)
		}
	})
}

// FuzzSnapshotRestore feeds arbitrary snapshots to the FSM's full restore
// (fsm.Restore: every section, the consistency check): no panic; a
// snapshot it accepts is written out again (Snapshot, Persist's encoding)
// to bytes that restore and write out identically.
func FuzzSnapshotRestore(f *testing.F) {
	st := newState()
	for _, b := range seedCommands() {
		t, p, err := decodeCommand(b)
		if err != nil || p == nil {
			continue
		}
		st.applyAny(t, p)
	}
	var seed bytes.Buffer
	if err := writeSnapshot(&seed, st.capture()); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	var empty bytes.Buffer
	if err := writeSnapshot(&empty, newState().capture()); err != nil {
		f.Fatal(err)
	}
	f.Add(empty.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		m := newFSM()
		if err := m.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			return
		}
		var once, twice bytes.Buffer
		if err := writeSnapshot(&once, m.st.capture()); err != nil {
			t.Fatalf("write a restored snapshot: %v", err)
		}
		again := newFSM()
		if err := again.Restore(io.NopCloser(bytes.NewReader(once.Bytes()))); err != nil {
			t.Fatalf("restore a written snapshot: %v", err)
		}
		if err := writeSnapshot(&twice, again.st.capture()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("snapshot changed through restore: %d bytes, then %d", once.Len(), twice.Len())
		}
	})
}
