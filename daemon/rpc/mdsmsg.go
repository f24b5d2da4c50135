package rpc

import (
	"github.com/strata-hpc/strata/internal/capability"
)

// MDS method names.
const (
	MLookup       = "mds.lookup"
	MWalk         = "mds.walk"
	MGetattr      = "mds.getattr"
	MSetattr      = "mds.setattr"
	MCreate       = "mds.create"
	MMkdir        = "mds.mkdir"
	MSymlink      = "mds.symlink"
	MMknod        = "mds.mknod"
	MReadlink     = "mds.readlink"
	MLink         = "mds.link"
	MUnlink       = "mds.unlink"
	MRmdir        = "mds.rmdir"
	MRename       = "mds.rename"
	MReaddir      = "mds.readdir"
	MSetXattr     = "mds.setxattr"
	MGetXattr     = "mds.getxattr"
	MListXattr    = "mds.listxattr"
	MRemoveXattr  = "mds.removexattr"
	MStatFS       = "mds.statfs"
	MLayoutGet    = "mds.layoutget"
	MLayoutCommit = "mds.layoutcommit"
	MLayoutReturn = "mds.layoutreturn"
	MHeartbeat    = "mds.heartbeat"
	MCluster      = "mds.cluster"
	MAddVoter     = "mds.voter.add"
	MRemoveVoter  = "mds.voter.remove"
	MAuthSession  = "mds.auth.session"
)

// RootIno is the inode number of the root directory.
const RootIno uint64 = 1

// File types, as in the high bits of a POSIX mode (S_IFMT).
const (
	TypeFile    uint32 = 0o100000
	TypeDir     uint32 = 0o040000
	TypeSymlink uint32 = 0o120000
	TypeFifo    uint32 = 0o010000
	TypeChar    uint32 = 0o020000
	TypeBlock   uint32 = 0o060000
	TypeSocket  uint32 = 0o140000
	TypeMask    uint32 = 0o170000
)

// IsSpecial reports whether the type bits of mode are those of a special
// file: a FIFO, a character or block device node, or a UNIX socket.
func IsSpecial(mode uint32) bool {
	switch mode & TypeMask {
	case TypeFifo, TypeChar, TypeBlock, TypeSocket:
		return true
	}
	return false
}

// IsDevice reports whether the type bits of mode are a device node's.
func IsDevice(mode uint32) bool {
	t := mode & TypeMask
	return t == TypeChar || t == TypeBlock
}

// Major and Minor split a device number as Linux's new_encode_dev does
// (the encoding of stat's st_rdev and of FUSE's rdev); Mkdev joins them.
func Major(rdev uint32) uint32 { return (rdev & 0xfff00) >> 8 }

// Minor returns the minor number of rdev (see Major).
func Minor(rdev uint32) uint32 { return rdev&0xff | (rdev>>12)&0xfff00 }

// Mkdev returns the device number of major and minor (see Major).
func Mkdev(major, minor uint32) uint32 {
	return minor&0xff | (major&0xfff)<<8 | (minor&^0xff)<<12
}

// LayoutXattr is the extended attribute that sets and shows a layout.
const LayoutXattr = "user.strata.layout"

// Attr is an inode's attributes. Mode holds the type bits and permissions.
// Times are unix nanoseconds.
type Attr struct {
	Ino   uint64
	Mode  uint32
	Nlink uint32
	Uid   uint32
	Gid   uint32
	Size  uint64
	Atime int64
	Mtime int64
	Ctime int64
	Gen   uint64 // layout generation, files only
	Rdev  uint32 // device nodes: the device number (Major, Minor); appended later
	// NoXattrs says the inode has no extended attribute (beyond the ones
	// the MDS computes, LayoutXattr); false from an older MDS. Appended
	// later.
	NoXattrs bool
}

// IsDir reports whether the inode is a directory.
func (a *Attr) IsDir() bool { return a.Mode&TypeMask == TypeDir }

// IsSymlink reports whether the inode is a symbolic link.
func (a *Attr) IsSymlink() bool { return a.Mode&TypeMask == TypeSymlink }

// IsSpecial reports whether the inode is a FIFO, device node or socket.
func (a *Attr) IsSpecial() bool { return IsSpecial(a.Mode) }

// IsFile reports whether the inode is a regular file.
func (a *Attr) IsFile() bool { return a.Mode&TypeMask == TypeFile }

// Cred is the identity a namespace call is made with; it owns what it creates.
type Cred struct {
	Uid uint32
	Gid uint32
}

// EntryReq names a directory entry.
type EntryReq struct {
	Parent uint64
	Name   string
}

// WalkReq resolves an absolute path from the root, following symbolic links
// in every component but the last, and the last too when Follow is set.
type WalkReq struct {
	Path   string
	Follow bool
}

// AttrResp answers calls that return one inode's attributes.
type AttrResp struct {
	Attr Attr
}

// InoReq names an inode.
type InoReq struct {
	Ino uint64
}

// Setattr valid bits.
const (
	SetMode uint32 = 1 << iota
	SetUid
	SetGid
	SetSize
	SetAtime
	SetMtime
	// SetAtimeNow and SetMtimeNow, with SetAtime and SetMtime, set the
	// time to the MDS's now (UTIME_NOW): anyone who may write the file may,
	// where explicit times are for its owner.
	SetAtimeNow
	SetMtimeNow
)

// SetattrReq changes the attributes whose bit is in Valid. A size change of
// a file is only recorded here: the client truncates the components first.
type SetattrReq struct {
	Ino   uint64
	Valid uint32
	Mode  uint32
	Uid   uint32
	Gid   uint32
	Size  uint64
	Atime int64
	Mtime int64
}

// CreateReq creates a regular file (Mode holds permissions), or with
// Exclusive unset opens an existing one. Layout, if set, is a layout string
// for the new file (it overrides the inherited policy).
type CreateReq struct {
	Parent    uint64
	Name      string
	Mode      uint32
	Cred      Cred
	Exclusive bool
	Layout    string
	// Inline says the caller reads and writes inline files (inlinemsg.go):
	// only then may the MDS make the file inline. Appended later: an older
	// client (and the NFS front end, whose clients read the data servers)
	// sends false, and its files are made on the data servers at once.
	Inline bool
}

// CreateResp answers Create: the file and whether it was created.
type CreateResp struct {
	Attr    Attr
	Created bool
}

// MkdirReq creates a directory.
type MkdirReq struct {
	Parent uint64
	Name   string
	Mode   uint32
	Cred   Cred
}

// SymlinkReq creates a symbolic link to Target.
type SymlinkReq struct {
	Parent uint64
	Name   string
	Target string
	Cred   Cred
}

// MknodReq creates a special file (mknod(2)): Mode holds the type bits
// (TypeFifo, TypeChar, TypeBlock or TypeSocket) and the permissions; Rdev
// is the device number of a device node and ignored for other types.
type MknodReq struct {
	Parent uint64
	Name   string
	Mode   uint32
	Rdev   uint32
	Cred   Cred
}

// ReadlinkResp answers Readlink.
type ReadlinkResp struct {
	Target string
}

// LinkReq adds a hard link to Ino as NewParent/NewName.
type LinkReq struct {
	Ino       uint64
	NewParent uint64
	NewName   string
}

// Rename flags, as renameat2(2).
const (
	RenameNoReplace uint32 = 1
	RenameExchange  uint32 = 2
)

// RenameReq moves OldParent/OldName to NewParent/NewName, replacing a
// compatible target unless RenameNoReplace; RenameExchange swaps both.
type RenameReq struct {
	OldParent uint64
	OldName   string
	NewParent uint64
	NewName   string
	Flags     uint32
}

// ReaddirReq lists a directory from entries after the name After ("" for
// the start), at most Limit entries (0: a server default).
type ReaddirReq struct {
	Ino   uint64
	After string
	Limit uint32
}

// DirEntry is one directory entry with the child's attributes.
type DirEntry struct {
	Name string
	Attr Attr
}

// ReaddirResp answers Readdir in name order; More is set when entries remain.
type ReaddirResp struct {
	Entries []DirEntry
	More    bool
}

// Xattr set flags, as setxattr(2).
const (
	XattrCreate  uint32 = 1
	XattrReplace uint32 = 2
)

// XattrReq names an extended attribute, with a value and flags for set.
type XattrReq struct {
	Ino   uint64
	Name  string
	Value []byte
	Flags uint32
}

// XattrResp answers GetXattr.
type XattrResp struct {
	Value []byte
}

// ListXattrResp answers ListXattr.
type ListXattrResp struct {
	Names []string
}

// StatFSResp answers StatFS.
type StatFSResp struct {
	Capacity uint64
	Free     uint64
	Files    uint64 // inodes in use
	DSUp     uint32
	DSTotal  uint32
}

// Layout is a file's layout on the wire: geometry as a layout string
// (layout.Parse), generation, and for each column the target's id and
// address.
type Layout struct {
	Spec       string
	Generation uint64
	Targets    []string
	Addrs      []string
}

// LayoutGetReq asks for a file's layout and a capability: for reading, or
// with Write for reading and writing. Refresh says the caller holds the
// layout already (a new capability for an open file): the MDS does not
// count it as another writer to be returned.
//
// Created says the caller just created the file (an open with O_CREAT
// that made it): its owner may then write it whatever its mode says, as
// open(2) returns a writable descriptor for a file it creates read-only.
// The owner may open a file it holds (Refresh) the same way; anyone else
// is checked against the mode at every call.
type LayoutGetReq struct {
	Ino     uint64
	Write   bool
	Refresh bool // appended later: an older client sends false
	Created bool // appended later: an older client sends false
	// The QoS tag the capability is to carry (qos.Tag): the job the
	// caller serves (empty: none) and its class, one of io, stage, drain.
	// Appended later: an older client asks for class io, no job.
	Job   string
	Class uint8
	// Inline says the caller reads and writes inline files (inlinemsg.go);
	// appended later: an older client sends false, and the MDS moves an
	// inline file to the data servers before it answers.
	Inline bool
	// Count asks, with Refresh, that the write grant be counted as an
	// open to be returned (LayoutReturn): the caller's open grant was not
	// (LayoutGetResp.Uncounted) and the file may have left the MDS.
	// Appended later.
	Count bool
}

// LayoutGetResp answers LayoutGet with fresh attributes (close-to-open).
// Stale lists the components not to be read or written: a failed write
// or a corrupt block made them stale, and the MDS is rebuilding them.
type LayoutGetResp struct {
	Attr   Attr
	Layout Layout
	Cap    capability.Token
	Stale  []uint32 // appended later: an older MDS sends none
	// Inline is the content of an inline file (inlinemsg.go), only to a
	// caller that asked with Inline; nil: the bytes are on the data
	// servers. Appended later.
	Inline *InlineData
	// Uncounted says the write grant of an open (or of a refresh with
	// Count) was not counted, as the file is inline: no rebuild waits for
	// its writer, and the caller returns nothing at close. Before it
	// writes to the data servers (the file left the MDS), the caller asks
	// again with Refresh and Count. Only to a caller that asked with
	// Inline; appended later.
	Uncounted bool
}

// LayoutCommitReq publishes what a writer made durable: the file's size
// becomes max(size, End) and its mtime Mtime.
type LayoutCommitReq struct {
	Ino   uint64
	Gen   uint64
	End   uint64
	Mtime int64
}

// HeartbeatReq registers a data server and reports its state.
type HeartbeatReq struct {
	ID       string
	Addr     string
	Node     string
	Capacity uint64
	Free     uint64
	Load     float64
	Rack     string // appended later: empty from an older data server
	// Appended later: the version of the QoS policy the data server
	// applies and what its scheduler served (docs/qos.md).
	QoSVersion  uint64
	QoSInflight uint32
	QoSQueued   uint32
	QoSServed   []QoSServed
	// Appended later: what the scheduler was asked for (served or
	// waiting) per job and class, and what the server measured of its
	// disk and network (docs/qos.md, "The bandwidth ledger").
	QoSRequested []QoSServed
	Measure      *DSMeasure
}

// HeartbeatResp answers a heartbeat. QoSPolicy, appended later, is the
// cluster's QoS policy (JSON) of version QoSVersion, sent when the data
// server's differs.
type HeartbeatResp struct {
	IntervalMs uint32 // when to send the next one
	QoSVersion uint64
	QoSPolicy  []byte
}

// DSInfo is one data server as the MDS sees it.
type DSInfo struct {
	ID       string
	Addr     string
	Node     string
	Capacity uint64
	Free     uint64
	Load     float64
	State    string // up, down
	LastSeen int64  // unix nanoseconds
	Rack     string // appended later; empty: none set
}

// ClusterResp answers Cluster: the MDS's role and the DS registry.
type ClusterResp struct {
	ID        string
	Role      string // leader, follower, candidate
	Term      uint64
	Leader    string
	Applied   uint64
	DataSvrs  []DSInfo
	Inodes    uint64
	Default   string // default layout string
	StartedAt int64
	Voters    []MDSInfo // the raft configuration, as this node knows it
	LeaderRPC string    // the leader's RPC address, if known
}

// MDSInfo is one MDS replica in the raft configuration.
type MDSInfo struct {
	ID       string
	RaftAddr string
	RPCAddr  string // known once it has led, or from the peers it was started with
	Voter    bool
}

// VoterReq adds (ID, RaftAddr) as a voter, or removes ID.
type VoterReq struct {
	ID       string
	RaftAddr string
	Force    bool // add even if RaftAddr does not answer; appended later
}

// AuthSessionResp answers MAuthSession, a call whose Authorization
// header carries a MUNGE credential: the session token following calls
// carry, and who the MDS took the caller for.
type AuthSessionResp struct {
	Token  []byte
	Expiry int64 // unix nanoseconds
	Uid    uint32
	Gid    uint32
	Groups []uint32
}

// Empty is the request or response of calls that carry nothing.
type Empty struct{}
