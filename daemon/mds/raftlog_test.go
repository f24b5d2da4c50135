package mds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// openLog opens the raft log the way openRaft does.
func openLog(t *testing.T, dir string) (*wal.WAL, *metadb.BoltMetaDB) {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta))
	if err != nil {
		t.Fatalf("open raft log: %v", err)
	}
	return w, meta
}

// TestLogTailTruncateSurvivesRestart: a follower whose uncommitted tail a
// new leader overwrites has raft clear that suffix (DeleteRange of the
// tail). The replica must restart afterwards. raft-wal v0.4.0 marked the
// truncated segment sealed without writing its index, and the restarted
// replica panicked in raft.NewRaft with "sealed segment has no index block"
// (hashicorp/raft-wal#31; seen here in TestChaos seed 1 on an MDS restart).
func TestLogTailTruncateSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, meta := openLog(t, dir)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	// A new leader of term 2 overwrites 9 and 10.
	if err := w.DeleteRange(9, 10); err != nil {
		t.Fatalf("clear log suffix: %v", err)
	}
	for i := uint64(9); i <= 12; i++ {
		if err := w.StoreLog(&raft.Log{Index: i, Term: 2, Type: raft.LogCommand, Data: []byte{byte(i), 2}}); err != nil {
			t.Fatalf("store %d after the suffix was cleared: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}

	w, meta = openLog(t, dir)
	defer meta.Close()
	defer w.Close()
	last, err := w.LastIndex()
	if err != nil || last != 12 {
		t.Fatalf("last index after restart: %d, %v; want 12", last, err)
	}
	for i := uint64(1); i <= 12; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d after restart: %v", i, err)
		}
		wantTerm := uint64(1)
		if i >= 9 {
			wantTerm = 2
		}
		if l.Term != wantTerm || l.Data[0] != byte(i) {
			t.Fatalf("entry %d after restart: term %d data %v", i, l.Term, l.Data)
		}
	}
}
