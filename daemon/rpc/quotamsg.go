package rpc

// Quota calls (strata quota, like lfs quota): limits of bytes and inodes
// per user and per project, enforced by the MDS (EDQUOT), and the project
// of a directory, inherited by what is created in it.
const (
	MQuotaSet   = "mds.quota.set"
	MQuotaGet   = "mds.quota.get"
	MProjectSet = "mds.project.set"
	MQuotaRoom  = "mds.quota.room"
)

// Quota kinds.
const (
	QuotaUser    uint8 = 1
	QuotaProject uint8 = 2
)

// QuotaReq names a user's or a project's quota; for MQuotaSet, its
// limits (0: none; both 0 removes the quota).
type QuotaReq struct {
	Kind   uint8
	ID     uint32
	Bytes  uint64
	Inodes uint64
}

// QuotaResp answers both quota calls: what the user or project uses and
// its limits (0: none).
type QuotaResp struct {
	Kind        uint8
	ID          uint32
	Bytes       uint64
	Inodes      uint64
	BytesLimit  uint64
	InodesLimit uint64
}

// ProjectReq sets the project of an inode: a directory's is inherited by
// what is created in it; a file's usage moves to the new project.
type ProjectReq struct {
	Ino     uint64
	Project uint32
}

// QuotaRoomReq asks how far a file may grow before its owner's or its
// project's byte limit (MQuotaRoom): a mount asks at a write that grows a
// file, so that the write crossing the limit fails with EDQUOT, not only
// the LAYOUTCOMMIT at close, which the MDS still refuses.
type QuotaRoomReq struct {
	Ino uint64
}

// QuotaRoomResp is the file's committed size and how many bytes more its
// owner and project may use (NoQuotaLimit: neither has a byte limit). Other
// files' uncommitted writes are not counted: it is advice, the commit
// decides.
type QuotaRoomResp struct {
	Size uint64
	Room uint64
}

// NoQuotaLimit is the Room of a file no byte limit applies to.
const NoQuotaLimit = ^uint64(0)
