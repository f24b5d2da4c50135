package mds

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// A way back from a lost quorum. When a majority of the voters is gone for
// good, the survivors cannot elect a leader and no change can ever commit.
// Recover is hashicorp/raft's manual recovery (raft.RecoverCluster): run
// on each surviving replica's directory while its MDS is stopped, it
// replays that replica's log into a fresh state machine, writes a
// snapshot, and records a new configuration with the given voters, so
// that, restarted, they elect a leader among themselves. It keeps what the
// replica holds: run it on the survivor with the highest last index
// (RecoverInfo) so that no acknowledged change is lost.

// ErrRecover is wrapped by every Recover error.
var ErrRecover = errors.New("mds: recover")

// RecoverInfo describes the log of a recovered replica.
type RecoverInfo struct {
	LastIndex uint64 // the last raft index this replica held
	LastTerm  uint64
	Voters    []string // the new configuration, id=raftaddr
}

// Recover gives the stopped replica whose data is in dir (Config.Dir) a
// new raft configuration of voters ("id=raftaddr" or "raftaddr", as
// Config.Peers). With dryRun it only reads the log and reports it.
func Recover(dir string, voters []string, dryRun bool, log *slog.Logger) (RecoverInfo, error) {
	var info RecoverInfo
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	peers, err := parsePeers(voters)
	if err != nil {
		return info, fmt.Errorf("%w: %w", ErrRecover, err)
	}
	if len(peers) == 0 && !dryRun {
		return info, fmt.Errorf("%w: no voters given", ErrRecover)
	}
	walDir := filepath.Join(dir, "wal")
	if _, err := os.Stat(walDir); err != nil {
		return info, fmt.Errorf("%w: %s holds no MDS raft log: %w", ErrRecover, dir, err)
	}
	unlock, err := lockIdle(filepath.Join(walDir, metadb.FileName))
	if err != nil {
		return info, fmt.Errorf("%w: %w", ErrRecover, err)
	}
	unlock()
	hl := newHclog(log, "raft")
	meta := &metadb.BoltMetaDB{}
	defer meta.Close()
	w, err := wal.Open(walDir, wal.WithMetaStore(meta), wal.WithLogger(hl.Named("wal")))
	if err != nil {
		return info, fmt.Errorf("%w: open raft log %s: %w", ErrRecover, walDir, err)
	}
	defer w.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl.Named("snapshot"))
	if err != nil {
		return info, fmt.Errorf("%w: open snapshots: %w", ErrRecover, err)
	}
	if info.LastIndex, err = w.LastIndex(); err != nil {
		return info, fmt.Errorf("%w: %w", ErrRecover, err)
	}
	if info.LastIndex > 0 {
		var l raft.Log
		if err := w.GetLog(info.LastIndex, &l); err != nil {
			return info, fmt.Errorf("%w: read entry %d: %w", ErrRecover, info.LastIndex, err)
		}
		info.LastTerm = l.Term
	}
	if list, err := snaps.List(); err == nil && len(list) > 0 && list[0].Index > info.LastIndex {
		info.LastIndex, info.LastTerm = list[0].Index, list[0].Term
	}
	conf := raft.Configuration{}
	for _, p := range peers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.id), Address: raft.ServerAddress(p.addr)})
		info.Voters = append(info.Voters, p.id+"="+p.addr)
	}
	if dryRun {
		return info, nil
	}
	id := peers[0].id
	c := raftConfig(raftOptions{ID: id, Timeout: DefaultConfig().RaftTimeout, SnapshotThreshold: DefaultConfig().SnapshotThreshold, Log: hl})
	_, trans := raft.NewInmemTransport(raft.ServerAddress(peers[0].addr))
	if err := raft.RecoverCluster(c, newFSM(), w, w, snaps, trans, conf); err != nil {
		return info, fmt.Errorf("%w: %w", ErrRecover, err)
	}
	return info, nil
}

// lockIdle fails if another process (a running MDS) holds path's lock,
// which raft-wal's metadata store takes; else it returns a function that
// lets go of the probe's lock.
func lockIdle(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use: stop the MDS on this directory first", filepath.Dir(filepath.Dir(path)))
	}
	return func() { f.Close() }, nil
}
