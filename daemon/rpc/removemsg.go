package rpc

// DRemoveMany removes many components of one data server in one call:
// the MDS's orphan collection sends each data server the components of a
// round's orphans it holds together, instead of a DRemove per component.
// Each item is checked and answered as a DRemove of its own would be: its
// admin capability, its tombstone (all of a call's tombstones share one
// sync, made before any component goes), its removal. An older data
// server answers ENOSYS, and the caller falls back to DRemove.
const DRemoveMany = "ds.remove.many"

// MaxRemoveMany is the most components one DRemoveMany may name.
const MaxRemoveMany = 1024

// RemoveManyReq names the components to remove, each as the request of a
// DRemove of its own (Cap, ID, Tombstone; the other fields are unused).
type RemoveManyReq struct {
	Items []DSReq
}

// RemoveManyResp answers DRemoveMany item by item: Errnos[i] is 0 if item
// i is gone (also if it was never there), else the errno its DRemove
// would have failed with, and Msgs[i] says why.
type RemoveManyResp struct {
	Errnos []uint32
	Msgs   []string
}
