package mds

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// TestHeartbeatNames: a heartbeat whose data server id, node or rack is not
// a safe name (a newline, an escape sequence, a slash) is refused with
// EINVAL before raft: the log does not grow and the data server list does
// not show it. A good one registers.
func TestHeartbeatNames(t *testing.T) {
	m := startMDS(t, testConfig(t.TempDir()))
	good := rpc.HeartbeatReq{ID: "ds1", Node: "node-1.example", Rack: "r12", Addr: "127.0.0.1:1", Capacity: 1 << 30, Free: 1 << 29}
	must[rpc.HeartbeatResp](m, rpc.MHeartbeat, &good)
	before := m.raft().LastIndex()
	for _, tc := range []struct {
		name string
		mod  func(*rpc.HeartbeatReq)
	}{
		{"newline id", func(r *rpc.HeartbeatReq) { r.ID = "ds2\nds3  up  node9" }},
		{"escape id", func(r *rpc.HeartbeatReq) { r.ID = "ds2\x1b[31m" }},
		{"empty id", func(r *rpc.HeartbeatReq) { r.ID = "" }},
		{"long id", func(r *rpc.HeartbeatReq) { r.ID = strings.Repeat("d", rpc.MaxNameLen+1) }},
		{"newline node", func(r *rpc.HeartbeatReq) { r.ID, r.Node = "ds2", "n\nx" }},
		{"slash rack", func(r *rpc.HeartbeatReq) { r.ID, r.Rack = "ds2", "../r1" }},
		{"newline addr", func(r *rpc.HeartbeatReq) { r.ID, r.Addr = "ds2", "127.0.0.1:2\nx" }},
	} {
		req := good
		tc.mod(&req)
		_, err := call[rpc.HeartbeatResp](m, rpc.MHeartbeat, &req)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: heartbeat = %v, want EINVAL", tc.name, err)
		}
	}
	// The leader's own work (the rebuild manager, a session) may append
	// entries meanwhile: what the refused heartbeats must not append is a
	// registration.
	if n := loggedCommands(t, m, before); n[cmdRegisterDS] != 0 {
		t.Errorf("refused heartbeats cost log space: %d registrations logged", n[cmdRegisterDS])
	}
	cl, err := m.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.DataSvrs) != 1 || cl.DataSvrs[0].ID != "ds1" {
		t.Fatalf("registered data servers: %+v, want ds1 only", cl.DataSvrs)
	}
	// The FSM refuses too (an entry of a leader that did not check).
	if r := m.fsm.st.applyRegister(&registerCmd{ID: "ds9\n", Addr: "127.0.0.1:9"}); r.err == nil {
		t.Error("the FSM registered an id with a newline")
	}
}
