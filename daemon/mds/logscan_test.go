package mds

import (
	"testing"

	"github.com/hashicorp/raft"
)

// loggedCommands counts, by type, the commands in m's raft log after index
// from (batches opened). A test that a refused request costs no log space
// looks here for that request's own kind of entry: the applied index also
// moves for the leader's own work (heartbeats, the rebuild manager) and can
// lag a reply.
func loggedCommands(t *testing.T, m *tmds, from uint64) map[cmdType]int {
	t.Helper()
	n := map[cmdType]int{}
	last := m.node.raft.LastIndex()
	for i := from + 1; i <= last; i++ {
		var l raft.Log
		if err := m.node.wal.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if l.Type != raft.LogCommand || len(l.Data) == 0 {
			continue
		}
		cmds := [][]byte{l.Data}
		if cmdType(l.Data[0]) == cmdBatch {
			_, p, err := decodeCommand(l.Data)
			if err != nil {
				t.Fatalf("log entry %d: %v", i, err)
			}
			cmds = p.(*batchCmd).Cmds
		}
		for _, c := range cmds {
			if len(c) > 0 {
				n[cmdType(c[0])]++
			}
		}
	}
	return n
}
