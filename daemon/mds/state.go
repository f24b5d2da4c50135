package mds

import (
	"maps"
	"syscall"

	"github.com/strata-hpc/strata/daemon/rpc"
	"github.com/strata-hpc/strata/layout"
)

// inode is one file, directory, symbolic link or special file (FIFO,
// device node, socket: an inode with attributes and no data). Fields are exported for the
// snapshot codec only; the type is private to the FSM.
//
// Copy-on-write: an inode reachable from a snapshot in progress is never
// modified. Every change goes through state.w, which clones an inode whose
// epoch is older than the state's before handing it out for writing.
type inode struct {
	Ino     uint64
	Mode    uint32 // type bits and permissions
	Uid     uint32
	Gid     uint32
	Nlink   uint32
	Size    uint64
	Atime   int64 // unix nanoseconds
	Mtime   int64
	Ctime   int64
	Parent  uint64            // directories: the containing directory; the root's is itself
	Xattrs  map[string][]byte // values are never modified in place
	Target  string            // symbolic links
	Entries map[string]uint64 // directories: name -> inode
	Policy  layout.Policy     // directories: their own layout policy; zero inherits
	Layout  layout.Layout     // files; Targets is never modified in place
	Project uint32            // quota project (quota.go); appended later: 0 in older snapshots
	Rdev    uint32            // device nodes (rpc.Mkdev); appended later: 0 in older snapshots
	// Inline files (inline.go), appended later: false in older snapshots.
	// Data is never modified in place.
	Inline  bool
	Data    []byte // the file's bytes while Inline
	DataSum uint32 // CRC32C of Data
	DataVer uint64 // counts the changes of Data

	epoch uint64 // state epoch this copy belongs to
}

func (n *inode) isDir() bool     { return n.Mode&rpc.TypeMask == rpc.TypeDir }
func (n *inode) isFile() bool    { return n.Mode&rpc.TypeMask == rpc.TypeFile }
func (n *inode) isSymlink() bool { return n.Mode&rpc.TypeMask == rpc.TypeSymlink }

// attr returns the inode's attributes as they go on the wire.
func (n *inode) attr() rpc.Attr {
	return rpc.Attr{
		Ino:   n.Ino,
		Mode:  n.Mode,
		Nlink: n.Nlink,
		Uid:   n.Uid,
		Gid:   n.Gid,
		Size:  n.Size,
		Atime: n.Atime,
		Mtime: n.Mtime,
		Ctime: n.Ctime,
		Gen:   n.Layout.Generation,
		Rdev:  n.Rdev,

		NoXattrs: len(n.Xattrs) == 0,
	}
}

// clone returns a copy of n that shares nothing mutable with it.
func (n *inode) clone() *inode {
	c := *n
	c.Xattrs = maps.Clone(n.Xattrs)
	c.Entries = maps.Clone(n.Entries)
	if n.isDir() && c.Entries == nil {
		c.Entries = map[string]uint64{}
	}
	return &c
}

// orphanKey names the components of one generation of one file's layout.
type orphanKey struct {
	Ino uint64
	Gen uint64
}

// orphan is a layout whose components wait to be removed from the data
// servers: the file's last link went, or the file was given a new layout.
type orphan struct {
	Ino    uint64
	Layout layout.Layout
}

// dsRecord is the durable part of a data server's registration.
type dsRecord struct {
	ID   string
	Addr string
	Node string
	Rack string // appended later: empty in older snapshots
}

// state is the FSM's data: the namespace, the orphan queue and the durable
// registry of data servers. It is guarded by fsm.mu.
type state struct {
	inodes  map[uint64]*inode
	nextIno uint64
	orphans map[orphanKey]orphan
	ds      map[string]dsRecord
	locks   lockTable
	mds     map[string]string // MDS replica id -> RPC address (for redirects)
	tiers   tierTable         // job tier registry (tiers.go)
	rep     repairState       // failure handling (repairstate.go)
	quotas  map[quotaKey]quotaLimit
	qos     qosRecord // the QoS policy (qos.go)
	epoch   uint64    // bumped by each snapshot; see inode

	// Derived: every user's and project's usage, and the inodes the
	// command being applied touched (quota.go).
	usage   map[quotaKey]quotaUsage
	touched []touchedInode
	inline  uint64 // the bytes of every inline file (inline.go), kept with the usage
}

// newState returns the initial state: an empty root directory.
func newState() *state {
	st := &state{
		inodes:  map[uint64]*inode{},
		nextIno: rpc.RootIno + 1,
		orphans: map[orphanKey]orphan{},
		ds:      map[string]dsRecord{},
		locks:   lockTable{},
		mds:     map[string]string{},
		tiers:   tierTable{},
		rep:     newRepairState(),
		quotas:  map[quotaKey]quotaLimit{},
		usage:   map[quotaKey]quotaUsage{},
		epoch:   1,
	}
	st.inodes[rpc.RootIno] = &inode{
		Ino:     rpc.RootIno,
		Mode:    rpc.TypeDir | 0o755,
		Nlink:   2,
		Parent:  rpc.RootIno,
		Entries: map[string]uint64{},
		epoch:   st.epoch,
	}
	st.recountUsage()
	return st
}

// get returns inode ino for reading, or nil.
func (st *state) get(ino uint64) *inode { return st.inodes[ino] }

// w returns inode ino for writing, cloning it first if a snapshot may still
// read the current copy. The caller re-fetches with w for every change:
// a pointer from get may be a stale copy after another w.
func (st *state) w(ino uint64) *inode {
	st.noteTouch(ino)
	n := st.inodes[ino]
	if n.epoch != st.epoch {
		n = n.clone()
		n.epoch = st.epoch
		st.inodes[ino] = n
	}
	return n
}

// add inserts a new inode, allocating its number.
func (st *state) add(n *inode) *inode {
	n.Ino = st.nextIno
	st.nextIno++
	st.noteNew(n.Ino)
	n.epoch = st.epoch
	st.inodes[n.Ino] = n
	return n
}

// dir returns directory ino for reading, or ENOENT/ENOTDIR.
func (st *state) dir(ino uint64) (*inode, error) {
	n := st.inodes[ino]
	if n == nil {
		return nil, errf(syscall.ENOENT, "directory inode %d does not exist", ino)
	}
	if !n.isDir() {
		return nil, errf(syscall.ENOTDIR, "inode %d is not a directory", ino)
	}
	return n, nil
}

// node returns inode ino for reading, or ENOENT.
func (st *state) node(ino uint64) (*inode, error) {
	n := st.inodes[ino]
	if n == nil {
		return nil, errf(syscall.ENOENT, "inode %d does not exist", ino)
	}
	return n, nil
}

// child returns the entry name of directory parent, or ENOENT/ENOTDIR.
func (st *state) child(parent uint64, name string) (*inode, error) {
	d, err := st.dir(parent)
	if err != nil {
		return nil, err
	}
	ino, ok := d.Entries[name]
	if !ok {
		return nil, errf(syscall.ENOENT, "%q not found in directory %d", name, parent)
	}
	return st.inodes[ino], nil
}

// isAncestor reports whether directory a is dir or one of its ancestors.
func (st *state) isAncestor(a, dir uint64) bool {
	for i := 0; i < maxDepth; i++ {
		if dir == a {
			return true
		}
		n := st.inodes[dir]
		if n == nil || dir == rpc.RootIno {
			return false
		}
		dir = n.Parent
	}
	return false
}

// maxDepth bounds walks up the directory tree.
const maxDepth = 1 << 16

// policy returns the layout policy a new file in directory dir gets: dir's
// own policy completed by its ancestors' and then by def. widthSet reports
// whether the width came from a directory rather than from def.
func (st *state) policy(dir uint64, def layout.Policy) (p layout.Policy, widthSet bool) {
	for i := 0; i < maxDepth; i++ {
		n := st.inodes[dir]
		if n == nil {
			break
		}
		p = p.Inherit(n.Policy)
		if dir == rpc.RootIno {
			break
		}
		dir = n.Parent
	}
	return p.Inherit(def), p.Width != 0
}

// snapshotView is what a snapshot captures: shallow copies of the maps,
// whose inodes are never modified afterwards (copy-on-write).
type snapshotView struct {
	inodes  map[uint64]*inode
	nextIno uint64
	orphans map[orphanKey]orphan
	ds      map[string]dsRecord
	locks   lockTable
	mds     map[string]string
	tiers   tierTable
	rep     repairState
	quotas  map[quotaKey]quotaLimit
	qos     qosRecord
}

// capture returns a view of the current state and starts a new epoch, so
// that later changes copy the inodes the view shares.
func (st *state) capture() snapshotView {
	v := snapshotView{
		inodes:  maps.Clone(st.inodes),
		nextIno: st.nextIno,
		orphans: maps.Clone(st.orphans),
		ds:      maps.Clone(st.ds),
		locks:   maps.Clone(st.locks),
		mds:     maps.Clone(st.mds),
		tiers:   maps.Clone(st.tiers),
		rep:     st.rep.clone(),
		quotas:  maps.Clone(st.quotas),
		qos:     st.qos,
	}
	st.epoch++
	return v
}
