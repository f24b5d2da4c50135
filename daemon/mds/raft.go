package mds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// raftOptions are what openRaft needs; the MDS and the raw-raft benchmark
// baseline share them so that they measure the same log store and tuning.
type raftOptions struct {
	ID                string
	Addr              string
	Dir               string
	Timeout           time.Duration
	SnapshotThreshold uint64
	Log               hclog.Logger
	Peers             []peer      // initial voters; empty: this node alone
	Secret            []byte      // the cluster secret: peers prove it (raftauth.go)
	TLS, TLSDial      *tls.Config // if set, raft connections speak TLS: accepted with TLS, dialled with TLSDial
	Join              bool        // never bootstrap
}

// raftNode is a running raft with the stores it owns.
type raftNode struct {
	raft  *raft.Raft
	wal   *wal.WAL
	meta  *metadb.BoltMetaDB // raft-wal's Close leaves it open (and locked)
	trans *raft.NetworkTransport
}

// raftConfig returns raft's tuning: every timeout from o.Timeout, batched
// applies (BatchApplyCh with a BatchingFSM: one fsync and one FSM lock per
// batch) and the snapshot threshold.
func raftConfig(o raftOptions) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(o.ID)
	c.HeartbeatTimeout = o.Timeout
	c.ElectionTimeout = o.Timeout
	c.LeaderLeaseTimeout = o.Timeout
	c.CommitTimeout = min(max(o.Timeout/10, time.Millisecond), 50*time.Millisecond)
	c.BatchApplyCh = true
	c.MaxAppendEntries = 512
	c.SnapshotThreshold = o.SnapshotThreshold
	c.TrailingLogs = max(o.SnapshotThreshold, 64)
	c.NoLegacyTelemetry = true
	// A leader removed from the voters steps down to a follower that no
	// longer campaigns; it does not shut raft down by itself. Shutdown is
	// close's alone: a second Shutdown returns without waiting for raft's
	// goroutines, and close would then close the log under a run loop
	// still saving a term ("failed to save current term: closed" panicked
	// a test binary).
	c.ShutdownOnRemove = false
	c.Logger = o.Log
	return c
}

// openRaft opens (or creates) raft-wal under o.Dir/wal as log and stable
// store, file snapshots under o.Dir, a TCP transport on o.Addr, bootstraps
// (o.Peers, or this node alone) if there is no existing state and o.Join is
// unset, and starts raft.
func openRaft(o raftOptions, f raft.FSM) (_ *raftNode, err error) {
	c := raftConfig(o)
	if err := raft.ValidateConfig(c); err != nil {
		return nil, fmt.Errorf("raft config: %w", err)
	}
	walDir := filepath.Join(o.Dir, "wal")
	if err := os.MkdirAll(walDir, 0o700); err != nil {
		return nil, fmt.Errorf("create raft dir: %w", err)
	}
	n := &raftNode{meta: &metadb.BoltMetaDB{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	if n.wal, err = wal.Open(walDir, wal.WithMetaStore(n.meta), wal.WithLogger(o.Log.Named("wal"))); err != nil {
		return n, fmt.Errorf("open raft log %s: %w", walDir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(o.Dir, 2, o.Log.Named("snapshot"))
	if err != nil {
		return n, fmt.Errorf("open snapshot store: %w", err)
	}
	stream, err := newAuthStream(o.Addr, o.Secret, o.TLS, o.TLSDial)
	if err != nil {
		return n, fmt.Errorf("raft transport on %s: %w", o.Addr, err)
	}
	n.trans = raft.NewNetworkTransportWithLogger(stream, 3, 10*time.Second, o.Log.Named("transport"))
	has, err := raft.HasExistingState(n.wal, n.wal, snaps)
	if err != nil {
		return n, fmt.Errorf("read raft state: %w", err)
	}
	if !has && !o.Join {
		// Every initial voter bootstraps the same configuration; raft
		// accepts identical bootstraps, and a node that has state never
		// bootstraps again.
		boot := raft.Configuration{Servers: []raft.Server{{
			Suffrage: raft.Voter,
			ID:       c.LocalID,
			Address:  n.trans.LocalAddr(),
		}}}
		if len(o.Peers) > 0 {
			boot.Servers = nil
			for _, p := range o.Peers {
				boot.Servers = append(boot.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.id), Address: raft.ServerAddress(p.addr)})
			}
		}
		if err := raft.BootstrapCluster(c, n.wal, n.wal, snaps, n.trans, boot); err != nil {
			return n, fmt.Errorf("bootstrap raft: %w", err)
		}
	}
	if n.raft, err = raft.NewRaft(c, f, n.wal, n.wal, snaps, n.trans); err != nil {
		return n, fmt.Errorf("start raft: %w", err)
	}
	return n, nil
}

// close shuts raft down and closes the transport and the log store.
func (n *raftNode) close() error {
	var errs []error
	if n.raft != nil {
		if err := n.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("shut down raft: %w", err))
		}
	}
	if n.trans != nil {
		if err := n.trans.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft transport: %w", err))
		}
	}
	if n.wal != nil {
		if err := n.wal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close raft log: %w", err))
		}
	}
	if err := n.meta.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close raft log metadata: %w", err))
	}
	return errors.Join(errs...)
}

// roleOf names a raft state for the admin API.
func roleOf(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	}
	return "follower"
}

// awaitFuture waits for f, or for ctx to end. hashicorp/raft never answers
// a future that was queued just as it shut down (Barrier and Apply block
// on it for good), so a goroutine that Close waits for must not block on
// one past its ctx: the goroutine left waiting then ends with the process.
func awaitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", raft.ErrRaftShutdown, ctx.Err())
	}
}
