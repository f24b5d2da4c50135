package mds

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// A snapshot is a stream of records, each a uvarint length and an
// rpc.Marshal encoding: one snapHeader, then Inodes inode records in inode
// order, Orphans orphan records in key order, DataServers dsRecord records
// in id order, then Locks lockRecord records in inode order, each inode's
// locks in table order, MDSAddrs mdsAddrRecord records in id order, then
// Tiers tierRecord records in job order, then the failure-handling records
// (repairstate.go). The order makes the encoding of a
// state canonical. (Locks, MDSAddrs, Tiers and the failure-handling counts
// were appended to the header later: a snapshot without them decodes with
// none.)

// snapVersion is the snapshot format written by this binary.
const snapVersion = 1

// maxRecord bounds one record, so a corrupt length cannot force a huge
// allocation. The largest record is a directory with its entries.
const maxRecord = 1 << 31

// snapHeader opens a snapshot.
type snapHeader struct {
	Version     uint32
	NextIno     uint64
	Inodes      uint64
	Orphans     uint64
	DataServers uint64
	Locks       uint64
	MDSAddrs    uint64
	Tiers       uint64 // appended later: an older snapshot decodes with none
	// Appended later, the failure-handling records (repairstate.go).
	Stale, Rebuilds, Strays, Draining, Damaged uint64
	GrantsUntil                                int64 // the write-grant horizon (stale.go)
	HorizonTerm                                uint64
	PrevUntil                                  int64
	Quotas                                     uint64 // appended later: quotaLimit records after the failure handling's
	QoSVersion                                 uint64 // appended later: the QoS policy (qos.go); 0 none
	QoSPolicy                                  []byte
}

// mdsAddrRecord is one MDS replica's RPC address in a snapshot.
type mdsAddrRecord struct {
	ID  string
	RPC string
}

// lockRecord is one granted lock in a snapshot.
type lockRecord struct {
	Ino  uint64
	Held heldLock
}

// writeSnapshot encodes v to w.
func writeSnapshot(w io.Writer, v snapshotView) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var buf []byte
	put := func(msg any) error {
		buf = rpc.Marshal(buf[:0], msg)
		var lb [binary.MaxVarintLen64]byte
		if _, err := bw.Write(lb[:binary.PutUvarint(lb[:], uint64(len(buf)))]); err != nil {
			return err
		}
		_, err := bw.Write(buf)
		return err
	}
	h := snapHeader{
		Version:     snapVersion,
		NextIno:     v.nextIno,
		Inodes:      uint64(len(v.inodes)),
		Orphans:     uint64(len(v.orphans)),
		DataServers: uint64(len(v.ds)),
	}
	for _, ls := range v.locks {
		h.Locks += uint64(len(ls))
	}
	h.MDSAddrs = uint64(len(v.mds))
	h.Tiers = uint64(len(v.tiers))
	rc := v.rep.counts()
	h.Stale, h.Rebuilds, h.Strays, h.Draining, h.Damaged = rc.Stale, rc.Rebuilds, rc.Strays, rc.Draining, rc.Damaged
	h.GrantsUntil, h.HorizonTerm, h.PrevUntil = v.rep.grantsUntil, v.rep.horizonTerm, v.rep.prevUntil
	h.Quotas = uint64(len(v.quotas))
	h.QoSVersion, h.QoSPolicy = v.qos.Version, v.qos.Doc
	if err := put(&h); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	for _, ino := range slices.Sorted(maps.Keys(v.inodes)) {
		if err := put(v.inodes[ino]); err != nil {
			return fmt.Errorf("write snapshot inode %d: %w", ino, err)
		}
	}
	keys := slices.SortedFunc(maps.Keys(v.orphans), func(a, b orphanKey) int {
		return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Gen, b.Gen))
	})
	for _, k := range keys {
		o := v.orphans[k]
		if err := put(&o); err != nil {
			return fmt.Errorf("write snapshot orphan %d: %w", k.Ino, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(v.ds)) {
		r := v.ds[id]
		if err := put(&r); err != nil {
			return fmt.Errorf("write snapshot data server %s: %w", id, err)
		}
	}
	for _, ino := range slices.Sorted(maps.Keys(v.locks)) {
		for _, l := range v.locks[ino] {
			if err := put(&lockRecord{Ino: ino, Held: l}); err != nil {
				return fmt.Errorf("write snapshot lock on %d: %w", ino, err)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(v.mds)) {
		if err := put(&mdsAddrRecord{ID: id, RPC: v.mds[id]}); err != nil {
			return fmt.Errorf("write snapshot mds %s: %w", id, err)
		}
	}
	for _, job := range slices.Sorted(maps.Keys(v.tiers)) {
		if err := put(&tierRecord{Rec: *v.tiers[job]}); err != nil {
			return fmt.Errorf("write snapshot tier %d: %w", job, err)
		}
	}
	if err := writeRepair(put, v.rep); err != nil {
		return err
	}
	qkeys := slices.SortedFunc(maps.Keys(v.quotas), func(a, b quotaKey) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	for _, k := range qkeys {
		l := v.quotas[k]
		if err := put(&l); err != nil {
			return fmt.Errorf("write snapshot quota %d/%d: %w", k.Kind, k.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// readSnapshot decodes a snapshot into a new state and checks that it is
// whole: a root directory, every entry naming an inode.
func readSnapshot(r io.Reader) (*state, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var buf []byte
	get := func(msg any) error {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		if n > maxRecord {
			return fmt.Errorf("%w: record of %d bytes", ErrSnapshot, n)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		return rpc.Unmarshal(buf, msg)
	}
	var h snapHeader
	if err := get(&h); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrSnapshot, err)
	}
	if h.Version != snapVersion {
		return nil, fmt.Errorf("%w: version %d, this binary reads %d", ErrSnapshot, h.Version, snapVersion)
	}
	st := &state{
		inodes:  make(map[uint64]*inode, min(h.Inodes, 1<<20)),
		nextIno: h.NextIno,
		orphans: map[orphanKey]orphan{},
		ds:      map[string]dsRecord{},
		locks:   lockTable{},
		mds:     map[string]string{},
		tiers:   tierTable{},
		quotas:  map[quotaKey]quotaLimit{},
		rep:     newRepairState(),
		epoch:   1,
	}
	for i := uint64(0); i < h.Inodes; i++ {
		n := &inode{}
		if err := get(n); err != nil {
			return nil, fmt.Errorf("%w: inode record %d: %w", ErrSnapshot, i, err)
		}
		if n.isDir() && n.Entries == nil {
			n.Entries = map[string]uint64{}
		}
		n.epoch = st.epoch
		st.inodes[n.Ino] = n
	}
	for i := uint64(0); i < h.Orphans; i++ {
		var o orphan
		if err := get(&o); err != nil {
			return nil, fmt.Errorf("%w: orphan record %d: %w", ErrSnapshot, i, err)
		}
		st.orphans[orphanKey{Ino: o.Ino, Gen: o.Layout.Generation}] = o
	}
	for i := uint64(0); i < h.DataServers; i++ {
		var d dsRecord
		if err := get(&d); err != nil {
			return nil, fmt.Errorf("%w: data server record %d: %w", ErrSnapshot, i, err)
		}
		st.ds[d.ID] = d
	}
	for i := uint64(0); i < h.Locks; i++ {
		var l lockRecord
		if err := get(&l); err != nil {
			return nil, fmt.Errorf("%w: lock record %d: %w", ErrSnapshot, i, err)
		}
		st.locks[l.Ino] = append(st.locks[l.Ino], l.Held)
	}
	for i := uint64(0); i < h.MDSAddrs; i++ {
		var r mdsAddrRecord
		if err := get(&r); err != nil {
			return nil, fmt.Errorf("%w: mds record %d: %w", ErrSnapshot, i, err)
		}
		st.mds[r.ID] = r.RPC
	}
	for i := uint64(0); i < h.Tiers; i++ {
		var r tierRecord
		if err := get(&r); err != nil {
			return nil, fmt.Errorf("%w: tier record %d: %w", ErrSnapshot, i, err)
		}
		st.tiers[r.Rec.Job] = &r.Rec
	}
	rep, err := readRepair(get, repairCounts{Stale: h.Stale, Rebuilds: h.Rebuilds, Strays: h.Strays, Draining: h.Draining, Damaged: h.Damaged})
	if err != nil {
		return nil, err
	}
	st.rep = rep
	st.rep.grantsUntil, st.rep.horizonTerm, st.rep.prevUntil = h.GrantsUntil, h.HorizonTerm, h.PrevUntil
	for i := uint64(0); i < h.Quotas; i++ {
		var l quotaLimit
		if err := get(&l); err != nil {
			return nil, fmt.Errorf("%w: quota record %d: %w", ErrSnapshot, i, err)
		}
		st.quotas[quotaKey{l.Kind, l.ID}] = l
	}
	st.qos = qosRecord{Version: h.QoSVersion, Doc: h.QoSPolicy}
	st.recountUsage()
	if err := st.check(); err != nil {
		return nil, err
	}
	return st, nil
}

// check verifies the namespace's structure after a restore.
func (st *state) check() error {
	root := st.inodes[rpc.RootIno]
	if root == nil || !root.isDir() {
		return fmt.Errorf("%w: no root directory", ErrSnapshot)
	}
	for _, n := range st.inodes {
		if n.Ino >= st.nextIno {
			return fmt.Errorf("%w: inode %d is not below the next inode number %d", ErrSnapshot, n.Ino, st.nextIno)
		}
		for name, c := range n.Entries {
			if st.inodes[c] == nil {
				return fmt.Errorf("%w: entry %q of directory %d names missing inode %d", ErrSnapshot, name, n.Ino, c)
			}
		}
	}
	return nil
}
