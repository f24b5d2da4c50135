package rpc

// The "plus" calls are the namespace changes a mount makes most (create,
// mkdir, unlink, rmdir) answered with what the kernel asks next: the
// directory's attributes after the change (as NFSv3's post-op attributes
// in wcc_data), which the kernel fetches again after every change to a
// directory before it uses it, and for a create opened for writing, the
// file's layout, capability and quota room (what the first write would
// ask for). They are new methods, not new fields of the old ones, so an
// older client or MDS keeps working: an MDS without them answers ENOSYS
// and the client falls back to the plain call.
const (
	MCreatePlus = "mds.create.plus"
	MMkdirPlus  = "mds.mkdir.plus"
	MUnlinkPlus = "mds.unlink.plus"
	MRmdirPlus  = "mds.rmdir.plus"
)

// EntryPlusResp answers MMkdirPlus, MUnlinkPlus and MRmdirPlus: the inode
// made (zero for a removal) and the directory's attributes once the
// change was applied.
type EntryPlusResp struct {
	Attr Attr
	Dir  Attr
}

// CreatePlusReq is a create (MCreatePlus); with Open, the file is also
// opened for writing as MLayoutGet with Write (and Created if the call
// makes it) would, with the QoS tag Job and Class.
type CreatePlusReq struct {
	Create CreateReq
	Open   bool
	Job    string
	Class  uint8
	Inline bool // as LayoutGetReq.Inline; appended later
}

// CreatePlusResp answers MCreatePlus: the create's answer, the
// directory's attributes after it, and with Open the layout as
// MLayoutGet answers it (Layout) and the room the file has to grow
// (Quota, as MQuotaRoom). Layout and Quota are nil without Open, or if
// the open failed: the create stands, and the client's MLayoutGet tells
// why.
type CreatePlusResp struct {
	Create CreateResp
	Dir    Attr
	Layout *LayoutGetResp
	Quota  *QuotaRoomResp
}
