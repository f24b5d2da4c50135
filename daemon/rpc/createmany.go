package rpc

import "errors"

// MCreateMany creates several regular files in one call: a client that has
// many independent creates in flight (one per process or thread) sends
// them together, so that the round trip and the MDS's work before raft are
// paid once per batch, and the MDS proposes them to raft as one group.
// Each item is checked and applied exactly as an MCreate of its own, with
// its own result; one refused item fails nothing else.
const MCreateMany = "mds.createmany"

// MaxCreateMany is the most items one MCreateMany call may carry.
const MaxCreateMany = 256

// CreateManyReq is the request of MCreateMany: every item is the request
// of one MCreate, made with the call's identity.
type CreateManyReq struct {
	Items []CreateReq
}

// CreateManyResp answers MCreateMany: one result per item, in order.
type CreateManyResp struct {
	Items []CreateManyItem
}

// CreateManyItem is one item's result: the CreateResp of its file, or
// the errno and message it failed with (Errno non-zero).
type CreateManyItem struct {
	Attr    Attr
	Created bool
	Errno   uint32
	Msg     string
}

// CreateManyResult returns the result of a create that failed with err
// (nil: r) as an item of a CreateManyResp.
func CreateManyResult(r *CreateResp, err error) CreateManyItem {
	if err != nil {
		errno, msg := itemError(err)
		return CreateManyItem{Errno: errno, Msg: msg}
	}
	return CreateManyItem{Attr: r.Attr, Created: r.Created}
}

// Result returns the item as the reply of an MCreate: the CreateResp, or
// the *Error it failed with.
func (it *CreateManyItem) Result() (*CreateResp, error) {
	if it.Errno != 0 {
		return nil, &Error{Errno: it.Errno, Msg: it.Msg}
	}
	return &CreateResp{Attr: it.Attr, Created: it.Created}, nil
}

// MGetattrMany returns the attributes of several inodes in one call: a
// client that has many independent getattrs in flight (one per process or
// thread) sends them together, so that the round trip is paid once per
// batch. Each item is answered as an MGetattr of its own would be.
const MGetattrMany = "mds.getattrmany"

// MaxGetattrMany is the most inodes one MGetattrMany call may name.
const MaxGetattrMany = 1024

// GetattrManyReq is the request of MGetattrMany.
type GetattrManyReq struct {
	Inos []uint64
}

// GetattrManyResp answers MGetattrMany: one result per inode, in order.
type GetattrManyResp struct {
	Items []AttrItem
}

// AttrItem is one inode's attributes, or the errno and message its
// getattr failed with (Errno non-zero).
type AttrItem struct {
	Attr  Attr
	Errno uint32
	Msg   string
}

// AttrResult returns the result of a getattr that failed with err (nil:
// a) as an item of a GetattrManyResp.
func AttrResult(a *Attr, err error) AttrItem {
	if err != nil {
		errno, msg := itemError(err)
		return AttrItem{Errno: errno, Msg: msg}
	}
	return AttrItem{Attr: *a}
}

// Result returns the item as the reply of an MGetattr: the attributes,
// or the *Error it failed with.
func (it *AttrItem) Result() (*Attr, error) {
	if it.Errno != 0 {
		return nil, &Error{Errno: it.Errno, Msg: it.Msg}
	}
	return &it.Attr, nil
}

// itemError is the errno and message of a failed item of a batch call.
func itemError(err error) (uint32, string) {
	var re *Error
	if !errors.As(err, &re) {
		re = &Error{Errno: uint32(ToErrno(err)), Msg: err.Error()}
	}
	return re.Errno, re.Msg
}
