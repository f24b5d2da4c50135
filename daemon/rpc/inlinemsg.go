package rpc

import "github.com/strata-hpc/strata/internal/capability"

// Inline files (Lustre's Data-on-MDT). A regular file created while the
// MDS's inline threshold is set, by a caller that reads inline files
// (CreateReq.Inline), keeps its bytes in the MDS, in raft, as
// long as it stays within the threshold: written by MInlineWrite (one raft
// entry, durable and replicated as any metadata change), read with the
// LAYOUTGET its open makes anyway (LayoutGetResp.Inline), each copy with a
// CRC32C the reader checks. It moves to its layout's components on the
// data servers (MInlineSpill), for good, when it grows past the threshold
// or is opened by a client that does not ask for inline data
// (LayoutGetReq.Inline unset: an older client, the NFS front end).
const (
	MInlineWrite = "mds.inline.write"
	MInlineSpill = "mds.inline.spill"
)

// MaxInline is the largest threshold an MDS may set (mds Config.InlineMax):
// an inline write carries at most this many bytes, and raft entries stay
// far below the metadata body limit.
const MaxInline = 256 << 10

// InlineData is an inline file's content as LAYOUTGET answers it: Data,
// its CRC32C Sum (the reader checks it: a mismatch is EIO, never data),
// and Max, the size the file may reach inline (the MDS's threshold).
type InlineData struct {
	Data []byte
	Sum  uint32
	Max  uint64
}

// InlineWriteReq writes Data at Off into inline file Ino and sets its
// mtime to Mtime (0: the MDS's now). The end may not pass the threshold.
// Cap is the write capability of the caller's layout, checked as a data
// server checks a write's.
type InlineWriteReq struct {
	Ino   uint64
	Off   uint64
	Data  []byte
	Mtime int64
	Cap   capability.Token
}

// InlineWriteResp answers MInlineWrite: the attributes after the write,
// or with Spilled set, nothing written: the file is no longer inline and
// the caller writes to the data servers of a layout it fetches again.
type InlineWriteResp struct {
	Attr    Attr
	Spilled bool
}
